package backoffhttp

import (
	"io"
	"time"
)

// maxDrain and drainTimeout bound what a Transport reads of a response it
// discards, in bytes and in time (see "What RoundTrip returns" at
// Transport). The byte over 64 KiB reads the end of a body of exactly
// 64 KiB, such as the last chunk of a chunked one.
const (
	maxDrain     = 64<<10 + 1
	drainTimeout = time.Second
)

// drain reads body until it ends, but for at most maxDrain bytes and
// drainTimeout, and closes it with closeBody, which closes body once
// however often it is called: by then, or from the timer's goroutine when
// the time runs out, which ends the read that waits. Whoever else calls
// closeBody meanwhile ends the drain too.
func drain(body io.ReadCloser, closeBody func()) {
	timer := time.AfterFunc(drainTimeout, closeBody)
	io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	timer.Stop()
	closeBody()
}
