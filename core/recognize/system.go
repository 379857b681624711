package recognize

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionbench/sessionbench/core/sig"
)

// Texts the adapters write verbatim in the system message (core/adapter, §2 of the wire
// rules); TestMarkersMatchAdapter checks them against what the adapters write.
const (
	inputsHead     = "Your input fields are:\n"
	outputsHead    = "\nYour output fields are:\n"
	structureIntro = "All interactions will be structured in the following way, with the appropriate values filled in."
	jsonInputs     = "Inputs will have the following structure:"
	jsonOutputs    = "Outputs will be a JSON object with the following fields."
	objectiveHead  = "\nIn adhering to this structure, your objective is: "
	instrIndent    = "        "
)

// parseSystem reads FIELD_DESCRIPTIONS ⏎ FIELD_STRUCTURE ⏎ OBJECTIVE back into a
// signature and tells which adapter wrote it. The field names and their order come
// from the structure block (placeholders are plain), the types, descriptions and
// constraints from the descriptions.
func parseSystem(text string) (*sig.Signature, string, error) {
	if !strings.HasPrefix(text, inputsHead) {
		return nil, "", fmt.Errorf("it does not start with %q", strings.TrimSpace(inputsHead))
	}
	outAt := strings.Index(text, outputsHead)
	if outAt < 0 {
		return nil, "", fmt.Errorf("it has no %q line", strings.TrimSpace(outputsHead))
	}
	structAt := strings.Index(text[outAt:], "\n"+structureIntro)
	if structAt < 0 {
		return nil, "", fmt.Errorf("it has no field structure (%q)", structureIntro)
	}
	structAt += outAt
	objAt := strings.Index(text[structAt:], objectiveHead)
	if objAt < 0 {
		return nil, "", fmt.Errorf("it has no objective (%q)", strings.TrimSpace(objectiveHead))
	}
	objAt += structAt
	descs, structure, objective := text[:structAt], text[structAt+1:objAt], text[objAt+len(objectiveHead):]

	name := AdapterChat
	var ins, outs []string
	var err error
	if strings.HasPrefix(structure, structureIntro+"\n\n"+jsonInputs+"\n\n") {
		name = AdapterJSON
		ins, outs, err = jsonStructureNames(structure)
	} else {
		var all []string
		all, err = chatStructureNames(structure)
		if err == nil {
			ins, outs, err = splitNames(descs, all)
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("field structure: %w", err)
	}
	inList, outList, ok := strings.Cut(descs[len(inputsHead):], outputsHead)
	if !ok {
		return nil, "", fmt.Errorf("it has no %q line", strings.TrimSpace(outputsHead))
	}
	s := &sig.Signature{Name: "StringSignature"}
	if s.Inputs, err = parseFieldList(inList, ins); err != nil {
		return nil, "", fmt.Errorf("input fields: %w", err)
	}
	if s.Outputs, err = parseFieldList(outList, outs); err != nil {
		return nil, "", fmt.Errorf("output fields: %w", err)
	}
	if s.Instructions, err = parseObjective(objective); err != nil {
		return nil, "", fmt.Errorf("objective: %w", err)
	}
	return s, name, nil
}

// chatStructureNames lists the "[[ ## name ## ]]⏎{name}" placeholders of ChatAdapter's
// structure block in order (inputs, then outputs).
func chatStructureNames(structure string) ([]string, error) {
	body, ok := strings.CutSuffix(structure, "[[ ## completed ## ]]")
	if !ok {
		return nil, fmt.Errorf("it does not end with [[ ## completed ## ]]")
	}
	var names []string
	for _, block := range strings.Split(body, "\n\n") {
		rest, ok := strings.CutPrefix(block, "[[ ## ")
		if !ok {
			continue
		}
		n, _, ok := strings.Cut(rest, " ## ]]\n{")
		if ok && strings.HasPrefix(block, header(n)+"\n{"+n+"}") {
			names = append(names, n)
		}
	}
	return names, nil
}

// splitNames tells where ChatAdapter's structure block passes from inputs to outputs:
// the output list is the one numbered from 1 after "Your output fields are:".
func splitNames(descs string, all []string) ([]string, []string, error) {
	for p := 0; p < len(all); p++ {
		outFirst := outputsHead + "1. `" + all[p] + "` ("
		if p == 0 {
			if strings.HasPrefix(descs, inputsHead+outFirst) {
				return nil, all, nil
			}
			continue
		}
		if strings.HasPrefix(descs, inputsHead+"1. `"+all[0]+"` (") && strings.Contains(descs, outFirst) {
			return all[:p], all[p:], nil
		}
	}
	return nil, nil, fmt.Errorf("its fields (%s) do not match the field descriptions", strings.Join(all, ", "))
}

// jsonStructureNames reads JSONAdapter's structure block: input placeholders, then the
// outputs as a JSON object whose keys are the output names.
func jsonStructureNames(structure string) ([]string, []string, error) {
	rest := strings.TrimPrefix(structure, structureIntro+"\n\n"+jsonInputs+"\n\n")
	inBlock, outBlock, ok := strings.Cut(rest, jsonOutputs+"\n\n")
	if !ok {
		return nil, nil, fmt.Errorf("it has no %q line", jsonOutputs)
	}
	ins, err := chatStructureNames(strings.TrimSuffix(inBlock, "\n\n") + "\n\n[[ ## completed ## ]]")
	if err != nil {
		return nil, nil, err
	}
	v, err := sig.DecodeJSON([]byte(outBlock))
	if err != nil {
		return nil, nil, fmt.Errorf("the outputs are not a JSON object: %w", err)
	}
	m, ok := v.(*sig.Map)
	if !ok {
		return nil, nil, fmt.Errorf("the outputs are JSON %s, not an object", sig.KindName(v))
	}
	return ins, m.Keys(), nil
}

// parseFieldList reads a numbered field list ("1. `name` (type): desc", each entry
// possibly followed by a "Constraints: ..." line) for the given names in order. A
// description holding a line that starts like the next entry ("2. `b` (") is cut there:
// the text is ambiguous, and either reading formats back to the same bytes.
func parseFieldList(list string, names []string) ([]sig.Field, error) {
	fields := make([]sig.Field, 0, len(names))
	pos := 0
	for i, n := range names {
		head := strconv.Itoa(i+1) + ". `" + n + "` ("
		if !strings.HasPrefix(list[pos:], head) {
			return nil, fmt.Errorf("entry %d: expected %q, found %s", i+1, head, excerpt(list, pos))
		}
		start := pos + len(head)
		end := len(list)
		if i+1 < len(names) {
			nextHead := "\n" + strconv.Itoa(i+2) + ". `" + names[i+1] + "` ("
			at := strings.Index(list[start:], nextHead)
			if at < 0 {
				return nil, fmt.Errorf("entry %d (%s): the next field %q is not listed after it", i+1, n, names[i+1])
			}
			end = start + at
		}
		f, err := parseEntry(n, list[start:end])
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): %w", i+1, n, err)
		}
		fields = append(fields, f)
		pos = end + 1
	}
	if pos < len(list) {
		return nil, fmt.Errorf("unexpected text after the last field: %s", excerpt(list, pos))
	}
	return fields, nil
}

// parseEntry reads "type): desc[⏎Constraints: c]". The type is the first "): "-ended
// prefix that is a type name DSPy writes; a type sessionbench cannot express (an Enum
// or a pydantic model) is read as str, and the re-formatting check then reports it.
func parseEntry(name, body string) (sig.Field, error) {
	f := sig.Field{Name: name, Type: sig.TStr}
	rest := ""
	found := false
	for at := 0; ; {
		i := strings.Index(body[at:], "):")
		if i < 0 {
			break
		}
		i += at
		after := body[i+2:]
		if after == "" || after[0] == ' ' {
			if t, ok := parseTypeName(body[:i]); ok {
				f.Type, rest, found = t, strings.TrimPrefix(after, " "), true
				break
			}
			if !found { // remember the first candidate in case no type parses
				rest, found = strings.TrimPrefix(after, " "), true
			}
		}
		at = i + 1
	}
	if !found {
		return f, fmt.Errorf("no \"(type): description\" in %s", excerpt(body, 0))
	}
	if i := strings.LastIndex(rest, "\nConstraints: "); i >= 0 {
		if c, ok := sig.ParseConstraintText(rest[i+len("\nConstraints: "):]); ok {
			f.Constraints, rest = c, rest[:i]
		}
	}
	f.Desc = rest
	return f, nil
}

// parseTypeName parses a type as DSPy names it (get_annotation_name): Python spelling,
// with PEP 604 unions written UnionType[...]. The name must render back identically.
func parseTypeName(text string) (*sig.Type, bool) {
	pipes := strings.Count(text, "UnionType[")
	t, err := sig.ParseType(strings.ReplaceAll(text, "UnionType[", "Union["))
	if err != nil {
		return nil, false
	}
	if pipes == 0 {
		return t, t.Name() == text
	}
	var unions []*sig.Type
	var walk func(t *sig.Type)
	walk = func(t *sig.Type) {
		if t.Kind == sig.KindUnion {
			unions = append(unions, t)
		}
		for _, a := range t.Args {
			walk(a)
		}
	}
	walk(t)
	if len(unions) > 8 {
		return nil, false
	}
	// Which unions were PEP 604 is not in the parse; try each assignment.
	for mask := 0; mask < 1<<len(unions); mask++ {
		for i, u := range unions {
			u.Kind = sig.KindUnion
			if mask&(1<<i) != 0 {
				u.Kind = sig.KindPipeUnion
			}
		}
		if t.Name() == text {
			return t, true
		}
	}
	return nil, false
}

// parseObjective reads the instruction lines, each written after "⏎" and 8 spaces.
func parseObjective(text string) (string, error) {
	if text == "" {
		return "", nil
	}
	lines := strings.Split(text, "\n")
	if lines[0] != "" {
		return "", fmt.Errorf("the instructions do not start on their own line: %s", excerpt(text, 0))
	}
	out := make([]string, 0, len(lines)-1)
	for i, l := range lines[1:] {
		body, ok := strings.CutPrefix(l, instrIndent)
		if !ok {
			return "", fmt.Errorf("instruction line %d is not indented by 8 spaces: %s", i+1, excerpt(l, 0))
		}
		out = append(out, body)
	}
	return strings.Join(out, "\n"), nil
}
