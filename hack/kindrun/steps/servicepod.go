package steps

import (
	"bytes"
	"fmt"
	"text/template"
)

// servicePodTmpl defines "servicePod": the pod spec of the reference service as the flagger and
// argo steps roll it out, indented for a Deployment's or a Rollout's spec.template.spec. It runs
// image .Image in pool mode .PoolMode against the release's Redis (.Redis, password in secret
// .RedisSecret), under the restricted Pod Security Standard as the chart's tracks. The track is
// not the process's: Prometheus takes it from a Service's or the pod's labels and drops the
// process's own gray_status. The memory limit leaves room for misuse-reset's 8 MiB buffers; the
// CPU request is small (no HPA reads it, and the judge reads heap bytes and CPU per request,
// which the request does not change), so that the pods fit on the node beside the scenarios.
const servicePodTmpl = `{{define "servicePod"}}      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: poolparity
          image: {{.Image}}
          imagePullPolicy: IfNotPresent
          ports: [{name: http, containerPort: 8080}]
          env:
            - {name: POOL_MODE, value: {{.PoolMode}}}
            - {name: REDIS_ADDR, value: "{{.Redis}}"}
            - name: REDIS_PASSWORD
              valueFrom: {secretKeyRef: {name: "{{.RedisSecret}}", key: redis-password}}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            periodSeconds: 2
          resources:
            requests: {cpu: 10m, memory: 32Mi}
            limits: {memory: 256Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: ["ALL"]}
{{end}}`

// rolloutLoadRPS is the request rate of each Canary's and the Rollout's load: the judge reads
// heap bytes and CPU per request, whose pooled and misuse effects are large, and the steps run
// beside the scenarios on 2 cores.
const rolloutLoadRPS = 30

// renderWithServicePod renders tmpl, which may use {{template "servicePod" .}}, with data; a
// key tmpl or the pod spec needs and data lacks is an error.
func renderWithServicePod(name, tmpl string, data map[string]any) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(servicePodTmpl + tmpl)
	if err != nil {
		return nil, fmt.Errorf("parsing the %s template: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("rendering the %s template: %w", name, err)
	}
	return b.Bytes(), nil
}
