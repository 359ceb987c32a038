package rollout

// Loaded reports, without waiting, whether the rollouts were read once
// (see AwaitRollouts): before that every decision is ErrNotLoaded.
func (p *Planner) Loaded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded
}
