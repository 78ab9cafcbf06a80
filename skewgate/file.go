package skewgate

import "log/slog"

// FromFile is a gate with the policy in path; reload reads the file again,
// keeping the policy in force (and logging why) when the new one does not
// load.
func FromFile(path string, log *slog.Logger) (gate *Gate, reload func(), err error) {
	p, err := LoadPolicy(path)
	if err != nil {
		return nil, nil, err
	}
	gate = New(p, log)
	return gate, func() {
		p, err := LoadPolicy(path)
		if err != nil {
			log.Error("skew policy not reloaded; keeping the previous one", "err", err)
			return
		}
		gate.SetPolicy(p)
		log.Info("skew policy reloaded", "mode", p.Mode)
	}, nil
}
