package shortdur

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", time.Minute: "1m", time.Hour: "1h", 12 * time.Hour: "12h", 90 * time.Minute: "1h30m",
		500 * time.Millisecond: "500ms", 90 * time.Second: "1m30s", 25 * time.Second: "25s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}
