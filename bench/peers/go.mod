module github.com/stint-run/stint/bench/peers

go 1.26.0

replace github.com/stint-run/stint => ../..

require (
	github.com/bytecodealliance/wasmtime-go/v39 v39.0.1
	github.com/extism/go-sdk v1.7.1
	github.com/stint-run/stint v0.0.0-00010101000000-000000000000
	github.com/tetratelabs/wazero v1.12.0
)

require (
	github.com/dylibso/observe-sdk/go v0.0.0-20240819160327-2d926c5d788a // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20240805132620-81f5be970eca // indirect
	github.com/tetratelabs/wabin v0.0.0-20230304001439-f6f874872834 // indirect
	go.opentelemetry.io/proto/otlp v1.3.1 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
