package core

import (
	"encoding/json"
	"fmt"

	"github.com/sessionbench/sessionbench/core/sig"
	"github.com/sessionbench/sessionbench/core/trace"
)

// callsValue converts call records to JSON values for the save file.
func callsValue(calls []*trace.Call) []any {
	data, err := json.Marshal(calls)
	if err != nil {
		return nil
	}
	v, err := sig.DecodeJSON(data)
	if err != nil {
		return nil
	}
	l, _ := v.([]any)
	return l
}

// callsFromValue reads call records back from a decoded save file.
func callsFromValue(v any) ([]*trace.Call, error) {
	var calls []*trace.Call
	if err := json.Unmarshal([]byte(sig.JSON(v)), &calls); err != nil {
		return nil, fmt.Errorf("call records: %w", err)
	}
	return calls, nil
}
