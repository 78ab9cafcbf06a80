package source

// ForgetRenders makes d's next load render every pool anew, as if each had
// changed (for the external benchmarks).
func ForgetRenders(d *Dir) { d.renderer = Renderer{} }
