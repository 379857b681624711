package storage

// seedPath makes the first elements of a call's request or history, l, the list last
// stored under key, when they were found stored (seededCall: the prefix the call shares
// with the same predictor's call in the turn before, by the chain hash of that whole
// prefix, node last), and the cache holds nothing under key yet: the turn's commit then
// stores the call as that prefix and what follows, without looking the prefix up and
// reading its texts back (which, at a thousand turns, cost a first Send of a process
// more than all the rest of its commit, or a background warm-up of the branch that the
// commit had to wait for). Of the prefix's nodes only the last one's id is known: the
// others are kept with id 0, which putList never continues from. items are l's elements
// (at least as many), chain the hashes of its prefixes. gen is the cache's resets
// counter before the stored prefix was read: a cache emptied since (another process
// wrote: rows may be gone) takes nothing. With wait unset, a cache that a transaction
// holds takes nothing either (a record does not wait for a commit).
func (c *writeCache) seedPath(gen int64, key string, l elems, items []listItem, chain []hash16, last int64, wait bool) {
	n := l.Len()
	if n == 0 || last == 0 || len(chain) != n || len(items) < n {
		return
	}
	if wait {
		c.mu.Lock()
	} else if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	if c.contents == nil || c.resets.Load() != gen || c.paths[key].l.Len() > 0 {
		return
	}
	var nodes nodePath
	for i, h := range chain {
		nd := nodeRef{hash: h, depth: i + 1, role: items[i].key()}
		if i == n-1 {
			nd.id = last
		}
		nodes.push(nd)
	}
	c.paths[key] = listPath{l: l, nodes: nodes}
}
