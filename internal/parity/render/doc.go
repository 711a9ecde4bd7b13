// Package render writes a parity.Report for people and programs: a plain
// text table (Text), indented JSON (JSON) and one self-contained HTML page
// with inline SVG charts (HTML); Files writes all three to a directory.
// It judges nothing and reads nothing: the verdict is the report's.
package render
