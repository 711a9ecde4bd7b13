package judge_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/poolparity/poolparity/internal/judge"
)

func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name, list string
		want       string // the list as parsed, or the error's text
		allowed    []string
		refused    []string
	}{
		{"one namespace", "shop", "shop", []string{"shop"}, []string{"bank", "sho", "shop2", ""}},
		{"several, blanks and duplicates dropped, sorted", " shop, ,bank,shop ", "bank,shop", []string{"bank", "shop"}, []string{"img"}},
		{"every namespace", "*", "*", []string{"shop", "bank", "kube-system"}, nil},
		{"an empty list", " , ", "no namespace listed", nil, nil},
		{"a name that is no namespace", "shop,Bank_1", `namespace "Bank_1"`, nil, nil},
		{"every namespace beside a name", "*,shop", "must be alone", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := judge.ParseNamespaces(tc.list)
			if tc.allowed == nil {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.String() != tc.want {
				t.Errorf("String() = %q, want %q", n, tc.want)
			}
			for _, ns := range tc.allowed {
				if err := n.Check(ns); err != nil {
					t.Errorf("Check(%q) = %v", ns, err)
				}
			}
			for _, ns := range tc.refused {
				err := n.Check(ns)
				if !errors.Is(err, judge.ErrNamespaceRefused) || !strings.Contains(err.Error(), fmt.Sprintf("%q", ns)) {
					t.Errorf("Check(%q) = %v, want ErrNamespaceRefused naming it", ns, err)
				}
			}
		})
	}
	t.Run("the zero value allows none", func(t *testing.T) {
		if err := (judge.Namespaces{}).Check("default"); !errors.Is(err, judge.ErrNamespaceRefused) {
			t.Fatalf("Check = %v", err)
		}
	})
}

func ExampleNamespaces_Check() {
	allow, err := judge.ParseNamespaces("img, shop")
	fmt.Println(allow, err)
	fmt.Println(allow.Check("shop"))
	fmt.Println(allow.Check("bank"))
	// Output:
	// img,shop <nil>
	// <nil>
	// namespace not served: this judge does not answer for namespace "bank" (its NAMESPACES list does not include it)
}
