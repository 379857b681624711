package export

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/savefile"
	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
	"github.com/sessionbench/sessionbench/storage"
)

// chatTurn is turn i of a long support chat: two calls, each sending the whole
// conversation so far, as a session with history does.
func chatTurn(i int, msgs []lm.Message, hist sig.History) *trace.Turn {
	q := fmt.Sprintf("question %d: my login fails after the password reset, what now?", i)
	a := fmt.Sprintf("answer %d: clear the cookies, then sign in with the new password.", i)
	req := append(msgs[:len(msgs):len(msgs)], lm.Message{Role: "user", Content: "[[ ## question ## ]]\n" + q})
	call := func(id, path, out string) *trace.Call {
		return &trace.Call{ID: id, Path: path, PredictorType: "Predict", Adapter: "chat", Inputs: sig.NewMap("question", q),
			Outputs: sig.NewMap(out, a), History: hist, Messages: lm.MessagesOf(req), Completion: "[[ ## " + out + " ## ]]\n" + a,
			Started: time.Unix(int64(i), 0).UTC()}
	}
	return &trace.Turn{Index: i, Inputs: sig.NewMap("question", q), Outputs: sig.NewMap("reply", a),
		Calls: []*trace.Call{call("c1", "classify", "intent"), call("c2", "reply", "reply")}}
}

// benchStore holds a conversation of n chat turns.
func benchStore(b *testing.B, n int) *storage.Store {
	b.Helper()
	ctx := context.Background()
	s, err := storage.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if _, err := s.CreateConversation(ctx, storage.NewConversation{ID: "c", Title: "bench", Agent: "support"}); err != nil {
		b.Fatal(err)
	}
	msgs := []lm.Message{{Role: "system", Content: "Answer support questions."}}
	var hist sig.History
	for i := range n {
		t := chatTurn(i, msgs, hist)
		if _, err := s.AppendTurn(ctx, "c", storage.MainBranch, t); err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, t.Calls[1].Messages.At(t.Calls[1].Messages.Len()-1), lm.Message{Role: "assistant", Content: t.Calls[1].Completion})
		hist.Messages = append(hist.Messages, sig.NewMap("question", t.Inputs.String("question"), "reply", t.Outputs.String("reply")))
	}
	return s
}

// peakHeap runs f and returns the most heap it had in use at once (sampled every
// millisecond, after a collection before it starts).
func peakHeap(f func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	if peak < base.HeapInuse {
		return 0
	}
	return peak - base.HeapInuse
}

// BenchmarkExport exports conversations of growing length in each format and reports
// the peak heap (MB-peak) and the bytes written per turn: an export streams pages of
// turns, so its peak grows far slower than the conversation (whose requests grow with
// the square of its length).
func BenchmarkExport(b *testing.B) {
	for _, n := range []int{100, 400} {
		s := benchStore(b, n)
		src, err := Load(context.Background(), s, "c", storage.MainBranch)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range []struct {
			name string
			opts Options
		}{{"session-json", Options{}}, {"session-json-no-calls", Options{NoCalls: true}}, {"calls", Options{}}, {"markdown", Options{}}} {
			format := f.name
			if format != "calls" && format != "markdown" {
				format = "session-json"
			}
			b.Run(fmt.Sprintf("%s/turns=%d", f.name, n), func(b *testing.B) {
				var peak uint64
				var written int64
				for b.Loop() {
					cw := &countWriter{}
					peak = max(peak, peakHeap(func() {
						if err := Write(cw, format, src, f.opts); err != nil {
							b.Fatal(err)
						}
					}))
					written = cw.n
				}
				b.ReportMetric(float64(peak)/(1<<20), "MB-peak")
				b.ReportMetric(float64(written)/float64(n), "B-written/turn")
			})
		}
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// BenchmarkImport reads back the session-json export of a conversation (savefile.Decode
// and BuildImport, what import does before its one transaction) and reports the peak
// heap and its ratio to the file's size.
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{100, 400} {
		s := benchStore(b, n)
		src, err := Load(context.Background(), s, "c", storage.MainBranch)
		if err != nil {
			b.Fatal(err)
		}
		var file bytes.Buffer
		if err := Write(&file, "session-json", src, Options{}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					f, err := savefile.Decode(file.Bytes())
					if err != nil {
						b.Fatal(err)
					}
					if _, err := BuildImport(f); err != nil {
						b.Fatal(err)
					}
				}))
			}
			b.ReportMetric(float64(peak)/(1<<20), "MB-peak")
			b.ReportMetric(float64(peak)/float64(file.Len()), "peak/file")
			b.ReportMetric(float64(file.Len())/(1<<20), "MB-file")
		})
	}
}
