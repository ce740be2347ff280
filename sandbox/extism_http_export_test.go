package sandbox

import "go.uber.org/zap"

// CheckHTTPDial runs the HTTP dial check of a grant of hosts on address.
func CheckHTTPDial(hosts []string, address string) error {
	return newPluginHTTP(HTTPGrant{AllowedHosts: hosts}, zap.NewNop(), "test").checkDial("tcp", address, nil)
}

// HTTPHostAllowed reports whether a grant of hosts allows host.
func HTTPHostAllowed(hosts []string, host string) bool {
	h := newPluginHTTP(HTTPGrant{AllowedHosts: hosts}, zap.NewNop(), "test")
	return h != nil && h.allowed(host)
}

// HeadersJSON is headersJSON: a response's headers as http_headers gives
// them.
var HeadersJSON = headersJSON
