package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := New(&buf, false)
	r.now = c.now
	assert.False(t, r.tty)
	r.Printf("training: epoch %d/%d", 1, 200) // a new phase prints at once
	for ep := 2; ep <= 30; ep++ {
		c.t = c.t.Add(time.Second)
		r.Printf("training: epoch %d/%d", ep, 200)
	}
	r.Printf("QAT 4-bit: epoch %d", 1) // a new phase prints at once
	r.Done()
	r.Printf("QAT 4-bit: epoch %d", 1) // after Done, again
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.Equal(t, []string{
		"training: epoch 1/200", "training: epoch 11/200", "training: epoch 21/200",
		"QAT 4-bit: epoch 1", "QAT 4-bit: epoch 1",
	}, lines)
	assert.NotContains(t, buf.String(), "\r")
}

func TestTerminalRedraw(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	r := &Reporter{w: &buf, tty: true, now: c.now}
	r.Printf("batch %d", 1)
	c.t = c.t.Add(10 * time.Millisecond)
	r.Printf("batch %d", 2) // too soon: skipped
	c.t = c.t.Add(time.Second)
	r.Printf("batch %d", 3)
	r.Done()
	assert.Equal(t, "\r\033[Kbatch 1\r\033[Kbatch 3\r\033[K", buf.String())
}

func TestQuietAndNil(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, true)
	r.Printf("x %d", 1)
	r.Done()
	var nr *Reporter
	nr.Printf("x")
	nr.Done()
	assert.Empty(t, buf.String())
}
