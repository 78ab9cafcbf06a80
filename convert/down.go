package convert

import (
	"github.com/coreos/ignition/v2/config/translate"
	t30 "github.com/coreos/ignition/v2/config/v3_0/types"
	t31 "github.com/coreos/ignition/v2/config/v3_1/types"
	t34 "github.com/coreos/ignition/v2/config/v3_4/types"
	t35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
)

// The steps ign-converter lacks or gets wrong, written on Ignition's
// field-by-field translator. Each checks for what its target cannot hold
// first (MinVersion's reasons), so these guards are a second line: the
// lossless proof in Translate is the third.

// down36to35: 3.6 only changed the meaning of special mode bits, which
// MinVersion refuses before this step runs; the types are otherwise identical.
func down36to35(old Config) (t35.Config, error) {
	var ret t35.Config
	translate.NewTranslator().Translate(&old, &ret)
	ret.Ignition.Version = "3.5.0"
	return ret, validated(ret)
}

// down35to34 drops nothing: ign-converter's v35tov34 loses tang advertisements,
// which 3.4 does hold.
func down35to34(old t35.Config) (t34.Config, error) {
	tr := translate.NewTranslator()
	tr.AddCustomTranslator(func(l t35.Luks) (r t34.Luks) {
		inner := translate.NewTranslator()
		inner.Translate(&l.Clevis, &r.Clevis)
		inner.Translate(&l.KeyFile, &r.KeyFile)
		inner.Translate(&l.OpenOptions, &r.OpenOptions)
		inner.Translate(&l.Options, &r.Options)
		r.Device, r.Discard, r.Label, r.Name, r.UUID, r.WipeVolume = l.Device, l.Discard, l.Label, l.Name, l.UUID, l.WipeVolume
		return r
	})
	var ret t34.Config
	tr.Translate(&old, &ret)
	ret.Ignition.Version = "3.4.0"
	return ret, validated(ret)
}

// down31to30: 3.1 renamed the resource types and added headers, compression
// of configs and CAs, proxies and mount options; MinVersion refuses those.
func down31to30(old t31.Config) (t30.Config, error) {
	tr := translate.NewTranslator()
	tr.AddCustomTranslator(func(r t31.Resource) (c t30.ConfigReference) {
		c.Source = r.Source
		c.Verification.Hash = r.Verification.Hash
		return c
	})
	tr.AddCustomTranslator(func(r t31.Resource) (c t30.CaReference) {
		if r.Source != nil {
			c.Source = *r.Source
		}
		c.Verification.Hash = r.Verification.Hash
		return c
	})
	tr.AddCustomTranslator(func(r t31.Resource) (c t30.FileContents) {
		c.Compression, c.Source = r.Compression, r.Source
		c.Verification.Hash = r.Verification.Hash
		return c
	})
	tr.AddCustomTranslator(func(i t31.Ignition) (r t30.Ignition) {
		inner := translate.NewTranslator()
		inner.AddCustomTranslator(func(r t31.Resource) (c t30.ConfigReference) {
			c.Source = r.Source
			c.Verification.Hash = r.Verification.Hash
			return c
		})
		inner.AddCustomTranslator(func(r t31.Resource) (c t30.CaReference) {
			if r.Source != nil {
				c.Source = *r.Source
			}
			c.Verification.Hash = r.Verification.Hash
			return c
		})
		inner.Translate(&i.Config, &r.Config)
		inner.Translate(&i.Security, &r.Security)
		inner.Translate(&i.Timeouts, &r.Timeouts)
		r.Version = "3.0.0"
		return r
	})
	tr.AddCustomTranslator(func(f t31.Filesystem) (r t30.Filesystem) {
		inner := translate.NewTranslator()
		inner.Translate(&f.Options, &r.Options)
		r.Device, r.Format, r.Label, r.Path, r.UUID, r.WipeFilesystem = f.Device, f.Format, f.Label, f.Path, f.UUID, f.WipeFilesystem
		return r
	})
	var ret t30.Config
	tr.Translate(&old, &ret)
	return ret, validated(ret)
}

// validated runs Ignition's validation of the target spec, so a step never
// hands on a config that spec's Ignition would refuse.
func validated(cfg any) error {
	rpt := validate.ValidateWithContext(cfg, nil)
	if rpt.IsFatal() {
		return &InvalidError{Problems: problems(rpt, nil)}
	}
	return nil
}
