package corpus

import (
	"io"
	"os"
)

// pending is a file of a document format that a worker extracts ahead of
// the walk; the walk accounts for it (OnFile) and yields it in its turn.
type pending struct {
	event FileEvent
	done  chan struct{}
	doc   Document
	err   error
}

// extractAhead queues doc, the document of the file at path, to be
// extracted by a worker and yielded in walk order; the worker reads the
// rest of the open file f for its hash and closes it. With
// Config.ExtractWorkers files in flight, it first yields the oldest.
func (w *walk) extractAhead(ev FileEvent, doc Document, path string, f *os.File, rest io.Reader) error {
	if len(w.ahead) >= w.cfg.ExtractWorkers {
		if err := w.yieldOldest(); err != nil {
			f.Close()
			return err
		}
	}
	p := &pending{event: ev, done: make(chan struct{})}
	w.ahead = append(w.ahead, p)
	go func() {
		defer close(p.done)
		defer f.Close()
		if p.doc, p.err = w.extract(doc, path); p.err == nil {
			p.doc.SHA256 = hashAll(rest)
		}
	}()
	return nil
}

// yieldOldest waits for the oldest file in flight, then accounts for it
// and yields it.
func (w *walk) yieldOldest() error {
	p := w.ahead[0]
	w.ahead = w.ahead[1:]
	<-p.done
	if p.err != nil {
		return p.err
	}
	w.cfg.OnFile(p.event)
	return w.yield(p.doc)
}

// drain yields every file in flight, in walk order.
func (w *walk) drain() error {
	for len(w.ahead) > 0 {
		if err := w.yieldOldest(); err != nil {
			return err
		}
	}
	return nil
}

// end yields the files still in flight once the walk ended with err
// nil; otherwise, or when yielding one fails, it stops the others and
// waits for their workers, so that no tool outlives the walk.
func (w *walk) end(err error) error {
	if err == nil {
		err = w.drain()
	}
	if err != nil {
		w.cancel()
		for _, p := range w.ahead {
			<-p.done
		}
		w.ahead = nil
	}
	return err
}

// onFile accounts for a file the walk met, after the files in flight
// before it: a file read or parked is counted in walk order, so that
// what the caller recorded always adds up. An excluded file is counted
// at once.
func (w *walk) onFile(ev FileEvent) error {
	if ev.Excluded == "" {
		if err := w.drain(); err != nil {
			return err
		}
	}
	w.cfg.OnFile(ev)
	return nil
}
