package shutdown

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{}.WithDefaults()
	require.Equal(t, Config{
		Budget:      25 * time.Second,
		Drain:       5 * time.Second,
		Cancel:      15 * time.Second,
		ForceWait:   1 * time.Second,
		HookTimeout: 2 * time.Second,
	}, cfg)
	require.NoError(t, cfg.Validate())

	// Set fields are kept.
	cfg = Config{Drain: time.Second}.WithDefaults()
	require.Equal(t, time.Second, cfg.Drain)
	require.Equal(t, DefaultBudget, cfg.Budget)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		msg  string // exact message; empty means valid
	}{
		{"defaults", Config{}.WithDefaults(), ""},
		{"exactly fits", Config{Budget: 10 * time.Second, Drain: 3 * time.Second, Cancel: 4 * time.Second, ForceWait: time.Second, HookTimeout: 2 * time.Second}, ""},
		{
			"overruns budget",
			Config{Drain: 20 * time.Second}.WithDefaults(),
			"shutdown: invalid config: drain (20s) + cancel (15s) + force wait (1s) + hooks (2s) = 38s exceeds budget 25s",
		},
		{
			"budget too small",
			Config{Budget: 10 * time.Second}.WithDefaults(),
			"shutdown: invalid config: drain (5s) + cancel (15s) + force wait (1s) + hooks (2s) = 23s exceeds budget 10s",
		},
		{
			"negative drain",
			Config{Drain: -time.Second}.WithDefaults(),
			"shutdown: invalid config: drain is negative (-1s)",
		},
		{
			"several negatives",
			Config{Budget: -time.Second, HookTimeout: -2 * time.Millisecond}.WithDefaults(),
			"shutdown: invalid config: budget is negative (-1s)\nshutdown: invalid config: hook timeout is negative (-2ms)",
		},
		{"zero budget", Config{}, "shutdown: invalid config: budget (0s) must be positive"},
		{"huge values do not overflow", Config{Budget: time.Hour, Drain: 1 << 62, Cancel: 1 << 62}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.name == "huge values do not overflow" {
				require.ErrorIs(t, err, ErrInvalidConfig)
				require.Contains(t, err.Error(), "exceeds budget 1h0m0s")
				return
			}
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.msg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Cancel: time.Minute}, Options{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "cancel (1m0s)")

	c, err := New(Config{}, Options{})
	require.NoError(t, err)
	require.Equal(t, Config{}.WithDefaults(), c.Config())
}
