package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/sessionbench/sessionbench/storage"
)

func benchWaited(b *testing.B, dry bool) {
	ctx := context.Background()
	st, conv := sendFixtureOf(b, "SupportAgent", 1000)
	var open *storage.Store
	newModel := benchModel(b, false, 30*time.Millisecond)
	loopBeyond(b, func() (*modelTime, func() error, func() error, error) {
		if open != nil {
			open.Close()
		}
		var err error
		if open, err = storage.Open(ctx, st.Path()); err != nil {
			return nil, nil, nil, err
		}
		clock, model := newModel()
		a := New(open, model)
		a.SetAgentDirs()
		restored := a.RestoreAhead(ctx, conv, storage.MainBranch)
		a.mu.Lock()
		ah := a.aheads[conv+"\x00"+storage.MainBranch]
		a.mu.Unlock()
		<-ah.done
		if dry {
			if _, err := a.DryRun(ctx, conv, storage.MainBranch, question("x"), 1); err != nil {
				b.Fatal(err)
			}
		}
		send := func() error {
			_, err := a.Send(ctx, SendRequest{Conv: conv, Branch: storage.MainBranch, Inputs: question("Why was I charged twice?")}, nil)
			return err
		}
		return clock, send, func() error { restored(); return open.Settle() }, nil
	})
}

func BenchmarkZZRunWaited(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchWaited(b, false) })
	b.Run("dry", func(b *testing.B) { benchWaited(b, true) })
}
