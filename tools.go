//go:build tools

package tools

import (
	_ "github.com/jackc/pgx/v5"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/stretchr/testify/require"
	_ "github.com/tetratelabs/wazero"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "modernc.org/sqlite"
)
