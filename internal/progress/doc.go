// Package progress shows how long work is getting on, wherever it runs: on
// a terminal one status line is redrawn in place; anywhere else (a log, a
// pipe, CI) a plain line is printed when a new phase starts and then at most
// once per Interval, so a two-minute run never sits silent.
package progress
