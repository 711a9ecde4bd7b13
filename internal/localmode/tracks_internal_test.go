package localmode

import (
	"slices"
	"testing"
)

func TestCommandEnv(t *testing.T) {
	inherited := []string{"HOME=/root", "PORT=1", "POOLPARITY_POISON=0", "BIN=/usr/bin/mine", "REDIS_ADDR=x:1", "GRAY_STATUS=true"}
	tests := []struct {
		name   string
		poison bool
		clear  []string
		track  trackRun
		want   []string
	}{
		{"poison on by default, the run's variables replacing the inherited ones", true, nil,
			trackRun{port: "8081", gray: "false"},
			[]string{"HOME=/root", "BIN=/usr/bin/mine", "REDIS_ADDR=x:1", "PORT=8081", "GRAY_STATUS=false", "POOLPARITY_POISON=1"}},
		{"poison off: an inherited POOLPARITY_POISON is cleared too", false, nil,
			trackRun{port: "8081", gray: "true"},
			[]string{"HOME=/root", "BIN=/usr/bin/mine", "REDIS_ADDR=x:1", "PORT=8081", "GRAY_STATUS=true"}},
		{"a track's own Env wins over the poison", true, nil,
			trackRun{port: "8082", gray: "true", Track: Track{Env: []string{"POOLPARITY_POISON=0"}}},
			[]string{"HOME=/root", "BIN=/usr/bin/mine", "REDIS_ADDR=x:1", "PORT=8082", "GRAY_STATUS=true", "POOLPARITY_POISON=1", "POOLPARITY_POISON=0"}},
		{"a build of the run's own is BIN; a cleared prefix goes", true, []string{"REDIS_"},
			trackRun{port: "8082", gray: "true", bin: "/out/bin/gray"},
			[]string{"HOME=/root", "PORT=8082", "GRAY_STATUS=true", "BIN=/out/bin/gray", "POOLPARITY_POISON=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			cfg.Poison, cfg.ClearEnv = tt.poison, tt.clear
			r := &runner{cfg: cfg}
			if got := r.commandEnv(inherited, &tt.track); !slices.Equal(got, tt.want) {
				t.Errorf("commandEnv =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
