package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/poolparity/poolparity/app/api/v1alpha1"
	"github.com/poolparity/poolparity/internal/cli"
)

const usageText = `usage: kubectl poolcanary COMMAND NAME [flags]

Commands:
  get NAME      phase, steps, weight asked and share given, replicas, conditions, last analysis
  promote NAME  skip the remaining steps and analyses and promote now (annotation poolparity.dev/promote)
  abort NAME    roll back now: gray to 0, stable carries everything, no analysis (annotation poolparity.dev/abort)
  pause NAME    hold the current split (spec.paused=true)
  resume NAME   go on from the current step (spec.paused=false)
  retry NAME    start a new rollout from the first step (a new spec.trigger), e.g. after a rollback or an abort

Flags (anywhere after COMMAND):
  -n, --namespace NS    the PoolCanary's namespace (default: the context's)
  --kubeconfig PATH     kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)
  --context NAME        kubeconfig context (default: the current one)
  -o, --output FORMAT   get: text (default) or json
  --timeout DURATION    how long the API server may take (default 30s)
`

// commands are the subcommands, in the order the usage lists them.
var commands = []string{"get", "promote", "abort", "pause", "resume", "retry"}

// options are a command line's flags and arguments.
type options struct {
	command, name                      string
	namespace, kubeconfig, kubeContext string
	output                             string
	timeout                            time.Duration
}

// run runs one command line. Its error carries the exit status: cli.ExitUsage for bad
// usage, cli.ExitFailure for anything else.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return nil
	}
	if err != nil {
		return cli.Usage(fmt.Errorf("%w (kubectl poolcanary -h for help)", err))
	}
	// controller-runtime's client logs through its package logger; the plugin reports
	// through its errors, one line each.
	ctrllog.SetLogger(logr.Discard())
	c, ns, err := newClient(o, getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	key := types.NamespacedName{Namespace: ns, Name: o.name}
	pc, err := getCanary(ctx, c, key)
	if err != nil {
		return err
	}
	switch o.command {
	case "get":
		return printCanary(stdout, pc, o.output)
	default:
		msg, err := act(ctx, c, pc, o.command, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "poolcanary %s/%s: %s\n", pc.Namespace, pc.Name, msg)
		return nil
	}
}

// parseArgs reads COMMAND NAME and the flags, which may stand anywhere after COMMAND, as
// kubectl's do.
func parseArgs(args []string) (options, error) {
	o := options{output: "text", timeout: 30 * time.Second}
	if len(args) == 0 {
		return o, errors.New("missing command: want one of " + strings.Join(commands, ", "))
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return o, flag.ErrHelp
	}
	o.command = args[0]
	if !slices.Contains(commands, o.command) {
		return o, fmt.Errorf("unknown command %q: want one of %s", o.command, strings.Join(commands, ", "))
	}
	fs := flag.NewFlagSet("kubectl poolcanary "+o.command, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned as one line; -h prints the usage
	for _, n := range []string{"n", "namespace"} {
		fs.StringVar(&o.namespace, n, "", "namespace")
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "API server timeout")
	if o.command == "get" {
		for _, n := range []string{"o", "output"} {
			fs.StringVar(&o.output, n, o.output, "output format")
		}
	}
	if o.command == "promote" {
		// Argo Rollouts' habit: promote always goes straight to promotion here.
		fs.Bool("full", true, "promote at once (the only way this plugin promotes)")
	}
	var positional []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return o, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	switch {
	case len(positional) == 0:
		return o, fmt.Errorf("%s: missing the PoolCanary's NAME", o.command)
	case len(positional) > 1:
		return o, fmt.Errorf("%s: want one NAME, got %q", o.command, positional)
	}
	o.name = positional[0]
	if o.output != "text" && o.output != "json" {
		return o, fmt.Errorf("-o %q: want text or json", o.output)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("--timeout %s: want a positive duration", o.timeout)
	}
	return o, nil
}

// newClient builds a client for the cluster kubectl would talk to, and the namespace it would
// use: --kubeconfig, else the files $KUBECONFIG lists, else ~/.kube/config; --context, else the
// current context; -n, else the context's namespace, else "default".
func newClient(o options, getenv func(string) string) (client.Client, string, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig}
	if env := getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
	} else if home := getenv("HOME"); home != "" {
		rules.Precedence = []string{filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}
	overrides.Context.Namespace = o.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %s", oneLine(err))
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig's namespace: %s", oneLine(err))
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to %s: %s", cfg.Host, oneLine(err))
	}
	return c, ns, nil
}

// getCanary reads the PoolCanary, or says in one line why it cannot.
func getCanary(ctx context.Context, c client.Client, key types.NamespacedName) (*v1alpha1.PoolCanary, error) {
	var pc v1alpha1.PoolCanary
	err := c.Get(ctx, key, &pc)
	switch {
	case err == nil:
		return &pc, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("poolcanary %q not found in namespace %q", key.Name, key.Namespace)
	case meta.IsNoMatchError(err):
		return nil, errors.New("the cluster has no PoolCanary resource (poolparity.dev/v1alpha1): is the CRD installed?")
	}
	return nil, fmt.Errorf("reading poolcanary %s/%s: %s", key.Namespace, key.Name, oneLine(err))
}

// oneLine keeps the first line of an error's message: the API machinery's can span several.
func oneLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}
