package storage

// nodePath is the nodes of a stored list's path from the root (at(i) ends its first i+1
// elements), in chunks of nodeChunk: every chunk but the last is full and never changes,
// so paths that begin alike share them. The next request of a conversation repeats the
// one before and adds a few messages, so its path costs its new nodes and at most a
// chunk's worth, not a copy of the whole path (at 10,000 turns those copies were 3 MB
// of a Send's 8).
type nodePath struct {
	chunks [][]nodeRef
	n      int
}

const nodeChunk = 256

// nodePathOf is the path of nodes.
func nodePathOf(nodes []nodeRef) nodePath {
	var p nodePath
	for _, nd := range nodes {
		p.push(nd)
	}
	return p
}

func (p nodePath) len() int { return p.n }

// at is node i (i < len).
func (p nodePath) at(i int) nodeRef { return p.chunks[i/nodeChunk][i%nodeChunk] }

// prefix is the first n nodes (n <= len), sharing p's full chunks: a path of its own to
// push onto (its partial last chunk is capped, so the first push copies it).
func (p nodePath) prefix(n int) nodePath {
	full, rem := n/nodeChunk, n%nodeChunk
	chunks := make([][]nodeRef, full, full+2)
	copy(chunks, p.chunks[:full])
	if rem > 0 {
		chunks = append(chunks, p.chunks[full][:rem:rem])
	}
	return nodePath{chunks: chunks, n: n}
}

// push appends nd to p, which must be a path of its own (prefix's, nodePathOf's, or
// the zero path): only its own chunk list and uncapped last chunk are written.
func (p *nodePath) push(nd nodeRef) {
	if k := len(p.chunks); k > 0 && len(p.chunks[k-1]) < nodeChunk {
		last := p.chunks[k-1]
		if len(last) == cap(last) { // shared with the path it is a prefix of
			c := make([]nodeRef, len(last), nodeChunk)
			copy(c, last)
			last = c
		}
		p.chunks[k-1] = append(last, nd)
	} else {
		c := make([]nodeRef, 1, nodeChunk)
		c[0] = nd
		p.chunks = append(p.chunks, c)
	}
	p.n++
}
