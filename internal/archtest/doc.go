// Package archtest holds the test that keeps qgtc's package dependencies
// flowing one way (see the README's architecture and STYLE.md); it has no
// code of its own.
package archtest
