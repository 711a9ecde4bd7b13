package steps

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/poolparity/poolparity/hack/kindrun/images"
	"github.com/poolparity/poolparity/hack/kindrun/kube"
	"github.com/poolparity/poolparity/internal/catalog"
	"github.com/poolparity/poolparity/internal/cli"
	"github.com/poolparity/poolparity/internal/judge"
	"github.com/poolparity/poolparity/internal/judge/judgehttp"
	"github.com/poolparity/poolparity/internal/judge/judgetest"
	"github.com/poolparity/poolparity/internal/parity"
	"github.com/poolparity/poolparity/internal/parity/promread"
)

// TestRenderFlagger renders each Canary's objects and reads them back: the webhooks' metadata
// must be what the judge's own parser accepts (a misspelt key is a 400 there, a failed check
// here), the Deployment must start in stable's pool mode, and the tracks must ride on the
// Services' labels that the ServiceMonitor reads.
func TestRenderFlagger(t *testing.T) {
	for _, c := range defaultFlaggerCanaries() {
		t.Run(c.name, func(t *testing.T) {
			y, err := renderFlagger(flaggerCanaryTmpl, c, "img:dev", judgeURL())
			if err != nil {
				t.Fatal(err)
			}
			objs, err := kube.DecodeObjects(y)
			if err != nil {
				t.Fatalf("decoding:\n%s\n%v", y, err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
				switch o.GetKind() {
				case "Deployment":
					checkFlaggerDeployment(t, o, c)
				case "Canary":
					checkFlaggerCanary(t, o, c)
				}
			}
			if want := []string{"Deployment", "Canary"}; !slices.Equal(kinds, want) {
				t.Errorf("kinds %v, want %v", kinds, want)
			}
			y, err = renderFlagger(flaggerScrapeTmpl, c, "", "")
			if err != nil {
				t.Fatal(err)
			}
			objs, err = kube.DecodeObjects(y)
			if err != nil || len(objs) != 1 || objs[0].GetKind() != "ServiceMonitor" {
				t.Fatalf("the scrape template gave %d objects (%v), want one ServiceMonitor", len(objs), err)
			}
			sel, _, _ := unstructured.NestedStringMap(objs[0].Object, "spec", "selector", "matchLabels")
			if sel["kindrun.poolparity.dev/flagger"] != c.name {
				t.Errorf("the ServiceMonitor selects %v, want the Canary's Services", sel)
			}
			if !strings.Contains(string(y), "__meta_kubernetes_service_label_poolparity_dev_gray_status") || !strings.Contains(string(y), "replacement: "+c.name) {
				t.Errorf("the ServiceMonitor does not take the track from the Service's label and the job from the Canary:\n%s", y)
			}
		})
	}
}

func checkFlaggerDeployment(t *testing.T, o *unstructured.Unstructured, c flaggerSpec) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
	if len(sel) != 1 || sel["app"] != c.name {
		t.Errorf("selector %v: Flagger must find the app label (its first selector label) alone", sel)
	}
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	env, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "env")
	mode := ""
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == "POOL_MODE" {
			mode, _ = m["value"].(string)
		}
	}
	if mode != c.stable {
		t.Errorf("POOL_MODE %q, want stable's %q", mode, c.stable)
	}
}

func checkFlaggerCanary(t *testing.T, o *unstructured.Unstructured, c flaggerSpec) {
	t.Helper()
	if p, _, _ := unstructured.NestedString(o.Object, "spec", "provider"); p != "gatewayapi:v1" {
		t.Errorf("provider %q, want gatewayapi:v1", p)
	}
	for track, want := range map[string]string{"primary": "false", "canary": "true"} {
		l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "service", track, "labels")
		if l["poolparity.dev/gray-status"] != want || l["kindrun.poolparity.dev/flagger"] != c.name {
			t.Errorf("the %s Service's labels %v, want gray-status %q and the Canary's name", track, l, want)
		}
	}
	hosts, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "service", "hosts")
	if !slices.Equal(hosts, []string{canaryHost(c.name)}) {
		t.Errorf("hosts %v", hosts)
	}
	hooks, _, _ := unstructured.NestedSlice(o.Object, "spec", "analysis", "webhooks")
	types := map[string]string{}
	for _, h := range hooks {
		m := h.(map[string]any)
		typ, url := m["type"].(string), m["url"].(string)
		types[typ] = url
		md, _, _ := unstructured.NestedStringMap(m, "metadata")
		req, err := judge.ParseParams(flaggerRunNS, md)
		if err != nil {
			t.Errorf("the %s hook's metadata %v: the judge refuses it: %v", typ, md, err)
			continue
		}
		if req.Mode != parity.StatCounts || !slices.Equal(req.SLIs, []catalog.ID{catalog.HeapAllocPerRequest, catalog.CPUPerRequest}) || req.MatchLabels["job"] != c.name ||
			req.Warmup != 20*time.Second || req.Step != 20*time.Second || req.Sample != "20s" {
			t.Errorf("the %s hook asks %+v, want the sequential test on heap bytes and CPU per request of job %s, the 20s rules every 20 s", typ, req, c.name)
		}
	}
	want := map[string]string{"rollout": judgeURL() + "/flagger/rollout", "confirm-promotion": judgeURL() + "/flagger/confirm-promotion"}
	if len(types) != len(want) || types["rollout"] != want["rollout"] || types["confirm-promotion"] != want["confirm-promotion"] {
		t.Errorf("webhooks %v, want %v", types, want)
	}
}

// upstreamFlaggerDeployment is the container of kustomize/base/flagger as kustomize v5 renders
// it for v1.36.1 (the part flaggerEdits changes).
const upstreamFlaggerDeployment = `    spec:
      containers:
      - image: ghcr.io/fluxcd/flagger:1.36.1
        imagePullPolicy: IfNotPresent
        name: flagger
`

func TestFlaggerManifest(t *testing.T) {
	tests := []struct {
		name     string
		rendered string
		want     []string // every one must be in the result
		err      bool
	}{
		{name: "the upstream image gets ours and the gatewayapi overlay's arguments", rendered: upstreamFlaggerDeployment,
			want: []string{"      - args:\n        - -log-level=info\n", "        - -mesh-provider=gatewayapi:v1\n",
				"        - -metrics-server=http://prom.monitoring.svc:9090\n", "        - -namespace=ns1\n",
				"        image: " + images.FlaggerImage + "\n        imagePullPolicy: IfNotPresent\n"}},
		{name: "another upstream version is refused", rendered: strings.ReplaceAll(upstreamFlaggerDeployment, "1.36.1", "1.37.0"), err: true},
		{name: "an empty rendering is refused", rendered: "", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := flaggerManifest([]byte(tt.rendered), "http://prom.monitoring.svc:9090", "ns1")
			if tt.err {
				if err == nil {
					t.Fatalf("no error, got:\n%s", m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(m), w) {
					t.Errorf("missing %q in:\n%s", w, m)
				}
			}
			if strings.Contains(string(m), "ghcr.io") {
				t.Errorf("an upstream image is left:\n%s", m)
			}
		})
	}
}

func TestCanaryStatusOf(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]any
		want flaggerStatus
		err  bool
	}{
		{name: "a new Canary has no status", obj: map[string]any{"spec": map[string]any{}}},
		{name: "numbers as the API server's JSON gives them", obj: map[string]any{"status": map[string]any{
			"phase": "Progressing", "canaryWeight": int64(50), "failedChecks": int64(1), "iterations": int64(2)}},
			want: flaggerStatus{Phase: "Progressing", CanaryWeight: 50, FailedChecks: 1, Iterations: 2}},
		{name: "numbers as floats", obj: map[string]any{"status": map[string]any{"phase": "Failed", "failedChecks": float64(2)}},
			want: flaggerStatus{Phase: "Failed", FailedChecks: 2}},
		{name: "a phase that is not a string", obj: map[string]any{"status": map[string]any{"phase": int64(3)}}, err: true},
		{name: "a weight that is not a number", obj: map[string]any{"status": map[string]any{"canaryWeight": "50"}}, err: true},
		{name: "a status that is not an object", obj: map[string]any{"status": "Succeeded"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := canaryStatusOf(tt.obj)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if !tt.err && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestJudgeAnswers(t *testing.T) {
	fail := `Halt flagger-unpooled.poolparity-flagger advancement external check poolparity-judge failed {"verdict":"FAIL","phase":"Failed","proceed":false}`
	tests := []struct {
		name      string
		msgs      []string
		fails     int
		confirmed bool
	}{
		{name: "no events", msgs: nil},
		{name: "a FAIL of the rollout hook", msgs: []string{"Starting canary analysis for flagger-unpooled.poolparity-flagger", fail,
			"Rolling back flagger-unpooled.poolparity-flagger failed checks threshold reached 2"}, fails: 1},
		{name: "an ERROR of the rollout hook is no FAIL", msgs: []string{
			`Halt x.y advancement external check poolparity-judge failed {"verdict": "ERROR", "reasons": ["Prometheus unreadable"]}`}},
		{name: "a held promotion quoting the judge is no FAIL of the rollout hook", msgs: []string{
			`Halt x.y advancement external check poolparity-judge-promotion failed {"verdict":"FAIL"}`}},
		{name: "the promotion confirmed", msgs: []string{"Confirm-promotion check poolparity-judge-promotion passed",
			"Copying flagger-pooled.poolparity-flagger template spec to flagger-pooled-primary.poolparity-flagger"}, confirmed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fails, confirmed := judgeAnswers(tt.msgs)
			if fails != tt.fails || confirmed != tt.confirmed {
				t.Errorf("got %d FAILs, confirmed %v; want %d, %v", fails, confirmed, tt.fails, tt.confirmed)
			}
		})
	}
}

func TestFlaggerProblems(t *testing.T) {
	pooled, misuse := defaultFlaggerCanaries()[0], defaultFlaggerCanaries()[1]
	promoted := FlaggerRun{Phase: "Succeeded", Confirmed: true, StableSeries: 10 * time.Second, OldGone: 25 * time.Second,
		Tracks: []string{"false/pooled", "false/unpooled", "true/pooled"}}
	rolledBack := FlaggerRun{Phase: "Failed", Fails: 1, StableSeries: -1, OldGone: -1, Tracks: []string{"false/pooled", "true/misuse-reset"}}
	with := func(r FlaggerRun, f func(*FlaggerRun)) FlaggerRun { f(&r); return r }
	tests := []struct {
		name string
		c    flaggerSpec
		r    FlaggerRun
		want []string // a substring of each problem, in order
	}{
		{name: "promoted on the judge's PASS, the promoted pods stable", c: pooled, r: promoted},
		{name: "rolled back on the judge's FAIL", c: misuse, r: rolledBack},
		{name: "rolled back instead of promoted", c: pooled, r: with(promoted, func(r *FlaggerRun) { r.Phase = "Failed" }), want: []string{"ended Failed, want Succeeded"}},
		{name: "promoted without the confirm hook", c: pooled, r: with(promoted, func(r *FlaggerRun) { r.Confirmed = false }), want: []string{"without the judge's confirm-promotion"}},
		{name: "the promoted pods never stable", c: pooled, r: with(promoted, func(r *FlaggerRun) {
			r.StableSeries = -1
			r.Tracks = []string{"false/unpooled", "true/pooled"}
		}), want: []string{"no stable series of pool mode pooled"}},
		{name: "the old stable pods' series never gone", c: pooled, r: with(promoted, func(r *FlaggerRun) { r.OldGone = -1 }),
			want: []string{"old pool mode unpooled still there"}},
		{name: "a gray series in stable's mode (the tracks confused)", c: pooled, r: with(promoted, func(r *FlaggerRun) {
			r.Tracks = append(r.Tracks, "true/unpooled")
			slices.Sort(r.Tracks)
		}), want: []string{"a gray series ran stable's pool mode unpooled"}},
		{name: "a FAIL against the promoted gray", c: pooled, r: with(promoted, func(r *FlaggerRun) { r.Fails = 2 }), want: []string{"FAIL 2 times"}},
		{name: "rolled back without a FAIL", c: misuse, r: with(rolledBack, func(r *FlaggerRun) { r.Fails = 0 }), want: []string{"without a FAIL"}},
		{name: "the rolled-back mode on stable", c: misuse, r: with(rolledBack, func(r *FlaggerRun) { r.Tracks = append(r.Tracks, "false/misuse-reset") }),
			want: []string{"rolled-back pool mode misuse-reset"}},
		{name: "no gray series at all", c: misuse, r: with(rolledBack, func(r *FlaggerRun) { r.Tracks = []string{"false/pooled"} }),
			want: []string{"no gray series of pool mode misuse-reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := flaggerProblems(tt.c, tt.r)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

func TestFlaggerTable(t *testing.T) {
	r := FlaggerResult{Runs: []FlaggerRun{
		{Name: "flagger-pooled", Modes: "unpooled -> pooled", Want: "Succeeded", Phase: "Succeeded", OK: true,
			Promoting: 200 * time.Second, End: 232 * time.Second, StableSeries: 9 * time.Second, OldGone: 21 * time.Second, Confirmed: true, Tracks: []string{"false/pooled", "true/pooled"}},
		{Name: "flagger-unpooled", Modes: "pooled -> unpooled", Want: "Succeeded", Phase: "Failed", End: 170 * time.Second,
			StableSeries: -1, OldGone: -1, Fails: 2, Problems: []string{"ended Failed, want Succeeded"}},
	}}
	out := r.Table(nil)
	for _, w := range []string{"3m20s", "3m52s", "+9s / +21s", "2m50s", "problem: ended Failed", ": as expected", ": NOT as expected"} {
		if !strings.Contains(out, w) {
			t.Errorf("the table lacks %q:\n%s", w, out)
		}
	}
}

// FuzzFlaggerParsers feeds the step's readers of Flagger's objects anything: a Canary as JSON
// and an event's message. Neither may panic; a status they accept reads back the phase given.
func FuzzFlaggerParsers(f *testing.F) {
	f.Add([]byte(`{"status":{"phase":"Progressing","canaryWeight":50,"failedChecks":1}}`), `Halt x.y advancement external check poolparity-judge failed {"verdict":"FAIL"}`)
	f.Add([]byte(`{"status":{"phase":3}}`), "Confirm-promotion check poolparity-judge-promotion passed")
	f.Add([]byte(`{"status":[]}`), `check poolparity-judge failed "verdict": "`)
	f.Fuzz(func(t *testing.T, obj []byte, msg string) {
		judgeAnswers([]string{msg, msg})
		var m map[string]any
		if json.Unmarshal(obj, &m) != nil {
			return
		}
		st, err := canaryStatusOf(m)
		if err != nil {
			return
		}
		if s, ok := m["status"].(map[string]any); ok && s["phase"] != nil && s["phase"] != st.Phase {
			t.Errorf("phase %v read as %q", s["phase"], st.Phase)
		}
	})
}

// TestJudgedLine: the judge's last answer to one Canary is found among its JSON log lines, the
// answers to other Canaries, its refusals and any other line left out.
func TestJudgedLine(t *testing.T) {
	const (
		first  = `{"time":"2026-11-29T10:26:10Z","level":"INFO","msg":"judged","hook":"rollout","namespace":"poolparity-flagger","name":"flagger-pooled","verdict":"NO DATA","status":200,"since":"2026-11-29T10:25:35Z","reasons":"CPU per request has no data"}`
		other  = `{"time":"2026-11-29T10:26:20Z","level":"INFO","msg":"judged","hook":"rollout","namespace":"poolparity-flagger","name":"flagger-misuse","verdict":"FAIL","status":412,"since":"2026-11-29T10:25:36Z","reasons":"CPU per request anytime-valid evidence"}`
		refuse = `{"time":"2026-11-29T10:26:25Z","level":"INFO","msg":"refused","hook":"rollout","status":400,"reason":"params","error":"mdoe: unknown parameter"}`
		last   = `{"time":"2026-11-29T10:27:50Z","level":"INFO","msg":"judged","hook":"confirm-promotion","namespace":"poolparity-flagger","name":"flagger-pooled","verdict":"PASS","status":200,"since":"2026-11-29T10:25:35Z","reasons":"2 of 2 rows pass"}`
	)
	for _, tc := range []struct {
		name, logs, canary string
		want               string // the verdict found, "" for none
	}{
		{"the last of two answers", strings.Join([]string{"[judge]", first, other, refuse, last, "not json"}, "\n"), "flagger-pooled", "PASS"},
		{"another Canary's answer", strings.Join([]string{first, other, last}, "\n"), "flagger-misuse", "FAIL"},
		{"only a refusal", refuse + "\n", "flagger-pooled", ""},
		{"no log", "", "flagger-pooled", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, ok := judgedLine(tc.logs, tc.canary)
			if ok != (tc.want != "") || j.Verdict != tc.want {
				t.Fatalf("judgedLine = %+v, %v; want verdict %q", j, ok, tc.want)
			}
			if ok && (j.Name != tc.canary || j.Since.IsZero() || j.Hook == "") {
				t.Errorf("the answer %+v lacks its Canary, start or hook", j)
			}
		})
	}
}

// TestJudgedLineReadsTheJudgesLog: the judge's own handler, logging as the judge binary does
// (internal/cli's JSON logger), answers a Flagger hook with the step's metadata, and judgedLine
// finds that answer in its log with its verdict and the start the handler remembered.
func TestJudgedLineReadsTheJudgesLog(t *testing.T) {
	prom := judgetest.NewProm(t, judgetest.NoData)
	clients, err := promread.NewClients([]string{prom.URL}, false, promread.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	allow, err := judge.ParseNamespaces(flaggerRunNS)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log, err := cli.NewLogger(&logs, "info")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := judgehttp.New(&judge.Judge{Clients: clients}, allow, nil, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(judgehttp.FlaggerPayload{Name: "flagger-pooled", Namespace: flaggerRunNS, Phase: "Progressing", Checksum: "c1", Metadata: flaggerJudgeMeta("flagger-pooled")})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/flagger/confirm-promotion", bytes.NewReader(body)))
	j, ok := judgedLine(logs.String(), "flagger-pooled")
	if !ok {
		t.Fatalf("no answer found in the judge's log (status %d):\n%s", rec.Code, logs.String())
	}
	if j.Verdict != string(parity.NoData) || j.Reasons == "" || j.Hook == "" || j.Since.Before(before.Add(-time.Second)) || j.Since.After(time.Now()) {
		t.Errorf("read %+v from the judge's log, want NO DATA with its reasons, hook and a start of now:\n%s", j, logs.String())
	}
}
