// Package deploy holds no code: it is the deployment files (a systemd
// unit, Kubernetes manifests, a Dockerfile and a compose file; see
// docs/deployment.md) and the test that checks them: each parses, stops
// the runner with SIGTERM, and waits longer than the runner's shutdown
// budget before it kills; the unit is of Type=notify with a WatchdogSec
// (systemd-analyze, where installed, finds nothing wrong in it) and the
// liveness probe restarts a runner silent for 20s to 2min
// (deploy_test.go); the Kubernetes memory settings fit under the pod's
// limit, and docs/deployment.md's snippets agree with the files
// (consistency_test.go). prometheus/ (alerting rules) and grafana/ (a
// dashboard) name the runner's metrics; server/deploy_metrics_test.go
// checks that each exists.
package deploy
