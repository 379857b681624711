package storage

import "testing"

// A path pushed onto after a prefix of another leaves the other as it was, whatever the
// lengths (within a chunk, at a chunk's end, past several), and holds the prefix's nodes
// followed by those pushed.
func TestNodePathPrefixesShareAndStayAsTheyWere(t *testing.T) {
	node := func(i int) nodeRef { return nodeRef{id: int64(i + 1)} }
	check := func(t *testing.T, name string, p nodePath, want []int64) {
		t.Helper()
		if p.len() != len(want) {
			t.Fatalf("%s: %d nodes, want %d", name, p.len(), len(want))
		}
		for i, id := range want {
			if got := p.at(i).id; got != id {
				t.Fatalf("%s: node %d is %d, want %d", name, i, got, id)
			}
		}
	}
	for _, n := range []int{0, 1, nodeChunk - 1, nodeChunk, nodeChunk + 1, 3*nodeChunk + 7} {
		var ids []int64
		var nodes []nodeRef
		for i := range n {
			ids, nodes = append(ids, int64(i+1)), append(nodes, node(i))
		}
		orig := nodePathOf(nodes)
		for _, cut := range []int{0, n / 2, max(n-1, 0), n} {
			for _, more := range []int{0, 1, nodeChunk + 3} {
				p := orig.prefix(cut)
				q := orig.prefix(cut) // a second branch off the same prefix
				want := append([]int64{}, ids[:cut]...)
				for i := range more {
					p.push(nodeRef{id: int64(-1 - i)})
					q.push(nodeRef{id: int64(-1000 - i)})
					want = append(want, int64(-1-i))
				}
				check(t, "pushed", p, want)
				check(t, "original", orig, ids)
				if more > 0 && q.at(cut).id != -1000 {
					t.Fatalf("n=%d cut=%d: the second branch holds %d", n, cut, q.at(cut).id)
				}
			}
		}
	}
}
