package sig

import (
	"encoding/json"
	"testing"
)

// TestRenderingDroppedWhenValuesChange: a rendering kept with a map is gone once the
// map's values change, however they change; reads keep it.
func TestRenderingDroppedWhenValuesChange(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Map)
		kept   bool
	}{
		{"Set of an existing key", func(m *Map) { m.Set("q", "other") }, false},
		{"Set of the same value", func(m *Map) { m.Set("q", "hi") }, false},
		{"Set of a new key", func(m *Map) { m.Set("z", int64(1)) }, false},
		{"Delete", func(m *Map) { m.Delete("a") }, false},
		{"UnmarshalJSON", func(m *Map) {
			if err := m.UnmarshalJSON([]byte(`{"q":"x"}`)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"Delete of a missing key", func(m *Map) { m.Delete("nope") }, true},
		{"reads", func(m *Map) { m.Get("q"); m.Keys(); m.Range(func(string, any) bool { return true }); m.Clone() }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMap("q", "hi", "a", "ans")
			r := &Rendering{Key: "k", User: "u", Assistant: "a"}
			m.SetRendering(r)
			c.change(m)
			if got := m.Rendering(); (got == r) != c.kept || (!c.kept && got != nil) {
				t.Errorf("rendering after the change: %v, kept want %v", got, c.kept)
			}
		})
	}
	if m := NewMap("q", "hi"); m.Clone().Rendering() != nil {
		t.Error("a clone starts without a rendering")
	}
	var nilMap *Map
	nilMap.SetRendering(&Rendering{}) // keeps nothing, does not panic
	if nilMap.Rendering() != nil {
		t.Error("a nil map has no rendering")
	}
}

func TestScalarValues(t *testing.T) {
	cases := []struct {
		m    *Map
		want bool
	}{
		{nil, true},
		{NewMap(), true},
		{NewMap("s", "x", "n", nil, "b", true, "i", int64(1), "f", 2.5, "big", json.Number("1e99")), true},
		{NewMap("s", "x", "l", []any{"a"}), false},
		{NewMap("d", NewMap("k", "v")), false},
		{NewMap("h", History{}), false},
	}
	for i, c := range cases {
		if got := c.m.ScalarValues(); got != c.want {
			t.Errorf("case %d: ScalarValues = %v, want %v", i, got, c.want)
		}
	}
}
