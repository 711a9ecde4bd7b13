package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poolparity/poolparity/internal/localmode"
)

func TestParseLocalRaceFlags(t *testing.T) {
	base := []string{"-stable-cmd", "./a", "-requests", "r.txt"}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		pkg, cmd string
		race     time.Duration
		wantErr  string // a substring of the error; "" for none
	}{
		{"without -gray-pkg no race phase runs, the default notwithstanding", []string{"-gray-cmd", "./b"}, nil, "", "./b", 0, ""},
		{"-gray-pkg alone runs its build and the default race phase", []string{"-gray-pkg", "./cmd/svc"}, nil, "./cmd/svc", "", localmode.DefaultRaceDuration, ""},
		{"-race-duration 0 turns the race phase off", []string{"-gray-pkg", "./cmd/svc", "-gray-cmd", `HTTP_ADDR=127.0.0.1:$PORT exec "$BIN"`, "-race-duration", "0"}, nil,
			"./cmd/svc", `HTTP_ADDR=127.0.0.1:$PORT exec "$BIN"`, 0, ""},
		{"the variables set both", nil, map[string]string{"PARITY_LOCAL_GRAY_PKG": "example.com/svc", "PARITY_LOCAL_RACE_DURATION": "5s"}, "example.com/svc", "", 5 * time.Second, ""},
		{"-race-duration without -gray-pkg is refused", []string{"-gray-cmd", "./b", "-race-duration", "30s"}, nil, "", "", 0, "-race-duration needs -gray-pkg"},
		{"PARITY_LOCAL_RACE_DURATION without -gray-pkg is refused", []string{"-gray-cmd", "./b"}, map[string]string{"PARITY_LOCAL_RACE_DURATION": "30s"}, "", "", 0, "-race-duration needs -gray-pkg"},
		{"a negative race duration is refused", []string{"-gray-pkg", "./cmd/svc", "-race-duration", "-1s"}, nil, "", "", 0, "RACE_DURATION must be between 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseLocalConfig(append(append([]string(nil), base...), tt.args...), env(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, localmode.ErrInvalid) {
					t.Errorf("error %v, want an ErrInvalid naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.GrayPackage != tt.pkg || c.Gray.Cmd != tt.cmd || c.RaceDuration != tt.race {
				t.Errorf("package %q, gray command %q, race duration %s; want %q, %q, %s", c.GrayPackage, c.Gray.Cmd, c.RaceDuration, tt.pkg, tt.cmd, tt.race)
			}
		})
	}
}
