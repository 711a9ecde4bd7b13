package render

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithoutDashboards(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, DashboardsPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, DashboardsPath, "pools.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		service   = "---\n# Source: poolparity/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n"
		dashboard = "---\n# Source: poolparity/templates/dashboards-configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  pools.json: |-\n    {}\n"
		otherCM   = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  config.yaml: |-\n    a: 1\n"
		// kustomize's output: no "---" before the first object.
		firstDash = "apiVersion: v1\ndata:\n  pools.json: '{}'\nkind: ConfigMap\nmetadata:\n  name: d\n"
	)
	tests := []struct {
		name, in, want string
	}{
		{"helm: the dashboard ConfigMap goes, the rest stays byte for byte", service + dashboard + otherCM, service + otherCM},
		{"kustomize: a dashboard first in the stream goes", firstDash + service, service},
		{"a ConfigMap without a dashboard of dashboards/ stays", otherCM, otherCM},
		{"comments only stay", "---\n# Source: empty\n", "---\n# Source: empty\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withoutDashboards(root, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			cms, err := DashboardConfigMaps(root, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range cms {
				if data["pools.json"] != "{}" {
					t.Errorf("ConfigMap %s: pools.json = %q, want {}", name, data["pools.json"])
				}
			}
		})
	}
}
