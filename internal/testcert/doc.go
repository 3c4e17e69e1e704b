// Package testcert makes self-signed TLS certificates for 127.0.0.1, for
// tests of admpo's TLS serving (package serve and the admpo binary).
package testcert
