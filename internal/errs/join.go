package errs

import "strings"

// Join is errors.Join on one line: the messages are separated by "; "
// instead of newlines, because an error of this library ends up in log
// lines and in the command's one-line reports, where a newline splits the
// story in two. Nil errors are dropped; Join returns nil when all are nil
// and the error itself when there is one. errors.Is and errors.As see
// every joined error (Unwrap() []error).
func Join(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &joined{errs: kept}
}

type joined struct{ errs []error }

func (j *joined) Error() string {
	msgs := make([]string, len(j.errs))
	for i, err := range j.errs {
		msgs[i] = OneLine(err.Error())
	}
	return strings.Join(msgs, "; ")
}

func (j *joined) Unwrap() []error { return j.errs }

// OneLine folds a message that spans lines (an errors.Join from elsewhere)
// into one, the lines separated by "; ".
func OneLine(msg string) string {
	if !strings.Contains(msg, "\n") {
		return msg
	}
	return strings.Join(strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' }), "; ")
}
