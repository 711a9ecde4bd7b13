// Command coredns is CoreDNS v1.14.6 (the version kubeadm v1.37.0 deploys) built with only the
// plugins that kubeadm's default Corefile uses, for the offline kind node image
// (hack/kindrun). CoreDNS's own main links every plugin, and with them several cloud SDKs; this
// build keeps the cluster DNS and its metrics and nothing else.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// directives is CoreDNS's plugin order (plugin.cfg) restricted to the plugins linked above.
var directives = []string{
	"reload", "ready", "health", "prometheus", "errors", "log", "loadbalance",
	"cache", "kubernetes", "loop", "forward",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
