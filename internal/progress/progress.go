package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Interval is the least time between two plain lines of the same phase.
var Interval = 10 * time.Second

// redraw is the least time between two redraws on a terminal.
const redraw = 100 * time.Millisecond

// Reporter prints progress to one writer. A nil *Reporter, or one made
// quiet, prints nothing; all methods are safe from several goroutines.
type Reporter struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	quiet bool
	phase string    // the text before the first digit of the last line
	last  time.Time // when the last line was printed
	shown bool      // a redrawn line is on the terminal
	now   func() time.Time
}

// New returns a Reporter writing to w; it redraws in place when w is a
// terminal.
func New(w io.Writer, quiet bool) *Reporter {
	return &Reporter{w: w, tty: IsTerminal(w), quiet: quiet, now: time.Now}
}

// Stderr is New(os.Stderr, quiet).
func Stderr(quiet bool) *Reporter { return New(os.Stderr, quiet) }

// IsTerminal says whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// phaseOf is a line's text up to its first digit: "training fp32: epoch 3"
// and "training fp32: epoch 4" are one phase, "QAT 4-bit" another.
func phaseOf(s string) string {
	if i := strings.IndexAny(s, "0123456789"); i >= 0 {
		return s[:i]
	}
	return s
}

// Printf reports the current state, e.g. "training: epoch 12/200".
func (r *Reporter) Printf(format string, args ...any) {
	if r == nil || r.quiet {
		return
	}
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.tty {
		if r.shown && now.Sub(r.last) < redraw {
			return
		}
		fmt.Fprintf(r.w, "\r\033[K%s", msg)
		r.shown, r.last = true, now
		return
	}
	if p := phaseOf(msg); p != r.phase || now.Sub(r.last) >= Interval {
		fmt.Fprintln(r.w, msg)
		r.phase, r.last = p, now
	}
}

// Done ends the current phase: a redrawn line is cleared, and the next
// Printf starts a new phase.
func (r *Reporter) Done() {
	if r == nil || r.quiet {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tty && r.shown {
		fmt.Fprint(r.w, "\r\033[K")
	}
	r.shown, r.phase, r.last = false, "", time.Time{}
}
