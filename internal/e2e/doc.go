// Package e2e holds black-box tests: they build the hoard binary, start it
// on a loopback port with temporary volumes and accounts, and talk HTTP to
// it. Nothing is mocked.
package e2e
