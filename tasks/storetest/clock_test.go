package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClock(t *testing.T) {
	t.Parallel()
	c := NewClock(Start)
	require.True(t, c.Now().Equal(Start))
	require.True(t, c.Advance(time.Second).Equal(Start.Add(time.Second)))
	require.True(t, c.Now().Equal(Start.Add(time.Second)))
	c.Set(Start)
	require.True(t, c.Now().Equal(Start))
}
