package storage

import (
	"database/sql"
	"encoding/json"
	"slices"

	"github.com/sessionbench/sessionbench/core/lm"
	"github.com/sessionbench/sessionbench/core/sig"
)

// decoder memoises JSON decoding within one load. A long branch repeats the same text
// many times: every call of a turn gets the turn's inputs, every request the same
// parameters, every history entry reappears in each later window. Decoding dominated
// loading; a copy of an already decoded value is several times cheaper. Every result is
// still a value of its own, so callers may change what they load.
type decoder struct {
	maps   map[string]*sig.Map
	params map[string]lm.Params
}

func newDecoder() *decoder {
	return &decoder{maps: map[string]*sig.Map{}, params: map[string]lm.Params{}}
}

// mapOf is the package's mapOf, memoised. The first decode is handed out as is and kept
// as the template of later copies; nothing changes it before the load returns.
func (d *decoder) mapOf(s sql.NullString) (*sig.Map, error) {
	if !s.Valid {
		return nil, nil
	}
	if m, ok := d.maps[s.String]; ok {
		return m.Clone(), nil
	}
	m, err := mapOf(s)
	if err != nil {
		return nil, err
	}
	d.maps[s.String] = m
	return m, nil
}

// historyEntry decodes one stored history entry (loadLists' conversion), memoised.
func (d *decoder) historyEntry(role, body, _ string) (*sig.Map, error) {
	if m, ok := d.maps[body]; ok {
		return m.Clone(), nil
	}
	m, err := decodeHistoryEntry(role, body)
	if err != nil {
		return nil, err
	}
	d.maps[body] = m
	return m, nil
}

// paramsOf decodes request parameters, memoised; pointer and slice fields are copied.
func (d *decoder) paramsOf(s string) (lm.Params, error) {
	p, ok := d.params[s]
	if !ok {
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			return lm.Params{}, err
		}
		d.params[s] = p
		return p, nil
	}
	p.Temperature = clonePtr(p.Temperature)
	p.MaxTokens = clonePtr(p.MaxTokens)
	p.TopP = clonePtr(p.TopP)
	p.Seed = clonePtr(p.Seed)
	p.Stop = slices.Clone(p.Stop)
	return p, nil
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
