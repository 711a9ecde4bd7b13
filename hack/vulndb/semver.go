package main

import (
	"cmp"
	"strings"
)

// semver is a semantic version (https://semver.org) as the OSV entries of the Go vulnerability
// database write them: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], without a "v" prefix. The module
// keeps golang.org/x/mod out of its requirements, so the few lines of precedence live here.
type semver struct {
	core [3]string // decimal, no leading zeros
	pre  []string  // prerelease identifiers; none for a release
}

// parseSemver parses v and reports whether it is a valid semantic version.
func parseSemver(v string) (semver, bool) {
	var s semver
	if i := strings.IndexByte(v, '+'); i >= 0 {
		if !identifiers(v[i+1:], false) {
			return s, false
		}
		v = v[:i]
	}
	if i := strings.IndexByte(v, '-'); i >= 0 {
		if !identifiers(v[i+1:], true) {
			return s, false
		}
		s.pre = strings.Split(v[i+1:], ".")
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return s, false
	}
	for i, p := range parts {
		if !isNumber(p) {
			return s, false
		}
		s.core[i] = p
	}
	return s, true
}

// identifiers reports whether list is a dot-separated list of non-empty [0-9A-Za-z-]
// identifiers; in a prerelease (numeric set), numeric identifiers must not have leading zeros.
func identifiers(list string, numeric bool) bool {
	for id := range strings.SplitSeq(list, ".") {
		if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
			return false
		}
		if numeric && allDigits(id) && !isNumber(id) {
			return false
		}
	}
	return true
}

func allDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// isNumber reports whether s is a decimal number without leading zeros.
func isNumber(s string) bool { return allDigits(s) && (s == "0" || s[0] != '0') }

// compareNumbers compares two decimal numbers without leading zeros, of any length.
func compareNumbers(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// compare returns -1, 0 or +1 as s precedes, equals or follows t (build metadata is ignored).
func (s semver) compare(t semver) int {
	for i := range s.core {
		if c := compareNumbers(s.core[i], t.core[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(s.pre) == 0 && len(t.pre) == 0:
		return 0
	case len(s.pre) == 0: // a release follows its prereleases
		return 1
	case len(t.pre) == 0:
		return -1
	}
	for i := 0; i < len(s.pre) && i < len(t.pre); i++ {
		a, b := s.pre[i], t.pre[i]
		var c int
		switch an, bn := allDigits(a), allDigits(b); {
		case an && bn:
			c = compareNumbers(a, b)
		case an: // numeric identifiers precede alphanumeric ones
			c = -1
		case bn:
			c = 1
		default:
			c = strings.Compare(a, b)
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(s.pre), len(t.pre)) // a longer set of equal identifiers follows
}

// versionLess reports whether a precedes b, with golang.org/x/mod/semver's convention (which
// govulncheck and the database's own generator use) that an invalid version, such as "",
// precedes every valid one.
func versionLess(a, b string) bool {
	sa, okA := parseSemver(a)
	sb, okB := parseSemver(b)
	switch {
	case !okB:
		return false
	case !okA:
		return true
	}
	return sa.compare(sb) < 0
}
