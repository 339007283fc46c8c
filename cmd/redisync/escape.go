package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Names, owner ids and field values come from Redis, where any client can
// write any bytes: an owner id of "\r\x1b[2K nothing is held" would rewrite
// the operator's screen if printed raw. Everything such goes through
// printable before it reaches a terminal; JSON output is escaped by
// encoding/json (control characters as \u00XX) and jsonPrintable.

// printable shows s with every byte that a terminal would act on spelled out
// in Go escape syntax (\x1b, \r, \n, \u202e, ...) instead of executed, and a
// backslash doubled so an escape cannot be forged. Printable text, including
// non-ASCII letters, is left as it is.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == '\\' || r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && !unicode.IsPrint(r) && r != ' ':
			fmt.Fprintf(&b, `\x%02x`, r)
		case !unicode.IsPrint(r) && r != ' ':
			// C1 controls, bidirectional overrides, zero-width and other
			// format characters: shown, not obeyed.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// controlsShown is printable for text that may already hold printable's
// escapes: it spells out every rune a terminal would act on (and invalid
// bytes) but leaves backslashes alone, so escaped text stays as it was.
func controlsShown(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\\' || (r != utf8.RuneError || size > 1) && (unicode.IsPrint(r) || r == ' ') {
			b.WriteString(s[i : i+size])
		} else {
			b.WriteString(printable(s[i : i+size]))
		}
		i += size
	}
	return b.String()
}

// jsonPrintable escapes, in a JSON document from encoding/json, the runes
// it leaves raw but a terminal obeys rather than shows: C1 controls,
// bidirectional overrides, zero-width and other format characters (ASCII
// controls are already \u00XX). Such runes occur only inside strings, where
// \uXXXX is their JSON spelling, so the document means the same.
func jsonPrintable(doc []byte) []byte {
	var b []byte
	for i := 0; i < len(doc); {
		r, size := utf8.DecodeRune(doc[i:])
		if r < utf8.RuneSelf || unicode.IsPrint(r) || r == utf8.RuneError && size <= 1 {
			b = append(b, doc[i:i+size]...)
			i += size
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
		} else {
			b = fmt.Appendf(b, `\u%04x`, r)
		}
		i += size
	}
	return b
}
