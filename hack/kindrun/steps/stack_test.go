package steps

import (
	"testing"
)

func TestOverrideImagesFailsOnAMissingImage(t *testing.T) {
	m := []byte("image: quay.io/a:v1\nargs: [--reloader=quay.io/b:v1]\n")
	out, err := overrideImages(m, map[string]string{"quay.io/a:v1": "local/a:v1", "quay.io/b:v1": "local/b:v1"})
	if err != nil || string(out) != "image: local/a:v1\nargs: [--reloader=local/b:v1]\n" {
		t.Errorf("overrideImages = %q, %v", out, err)
	}
	if _, err := overrideImages(m, map[string]string{"quay.io/c:v1": "local/c:v1"}); err == nil {
		t.Error("an image the manifest lacks must be an error, not a half-local install")
	}
}
