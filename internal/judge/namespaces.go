package judge

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// AllNamespaces is the one item of a namespace list that allows every
// namespace: for a cluster whose tenants trust each other, never the
// default.
const AllNamespaces = "*"

// ErrNamespaceRefused is wrapped by the error of a request for a namespace
// a Namespaces does not allow.
var ErrNamespaceRefused = errors.New("namespace not served")

// Namespaces is the allow-list of the namespaces whose rollouts a judge
// answers for. The zero value allows none. It is immutable once built, so
// safe for concurrent use.
type Namespaces struct {
	all   bool
	names []string
}

// ParseNamespaces returns the allow-list of list: namespace names,
// comma-separated, blanks dropped; or AllNamespaces alone. An empty list,
// a name that is not a namespace name, or AllNamespaces beside a name is
// an error.
func ParseNamespaces(list string) (Namespaces, error) {
	items := SplitList(list)
	if len(items) == 0 {
		return Namespaces{}, fmt.Errorf("no namespace listed")
	}
	if slices.Contains(items, AllNamespaces) {
		if len(items) > 1 {
			return Namespaces{}, fmt.Errorf("%q allows every namespace and must be alone, got %q", AllNamespaces, safe(list))
		}
		return Namespaces{all: true}, nil
	}
	var errs []error
	for _, ns := range items {
		if err := CheckNamespace(ns); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Namespaces{}, err
	}
	slices.Sort(items)
	return Namespaces{names: slices.Compact(items)}, nil
}

// Check returns nil if ns is allowed, else an error wrapping
// ErrNamespaceRefused that names ns (and not the allowed ones: the caller
// is not trusted with the list).
func (n Namespaces) Check(ns string) error {
	if n.all || slices.Contains(n.names, ns) {
		return nil
	}
	return fmt.Errorf("%w: this judge does not answer for namespace %q (its NAMESPACES list does not include it)", ErrNamespaceRefused, safe(ns))
}

// String returns the list as ParseNamespaces reads it.
func (n Namespaces) String() string {
	if n.all {
		return AllNamespaces
	}
	return strings.Join(n.names, ",")
}
