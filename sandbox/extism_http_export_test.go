package sandbox

import "go.uber.org/zap"

// CheckHTTPDial runs the HTTP dial check of a grant of hosts on address.
func CheckHTTPDial(hosts []string, address string) error {
	return newPluginHTTP(HTTPGrant{AllowedHosts: hosts}, zap.NewNop(), "test").checkDial("tcp", address, nil)
}

// HTTPHostAllowed reports whether a grant of hosts allows host on port
// 443.
func HTTPHostAllowed(hosts []string, host string) bool {
	return HTTPHostPortAllowed(hosts, host, 443)
}

// HTTPHostPortAllowed reports whether a grant of hosts allows host on
// port.
func HTTPHostPortAllowed(hosts []string, host string, port uint16) bool {
	h := newPluginHTTP(HTTPGrant{AllowedHosts: hosts}, zap.NewNop(), "test")
	return h != nil && h.allowed(host, port)
}

// HeadersJSON is headersJSON: a response's headers as http_headers gives
// them.
var HeadersJSON = headersJSON
