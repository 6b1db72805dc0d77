// Package plot draws small line charts as SVG (written by hand) and PNG
// (image/png) with no plotting dependency: enough for qgtc sweep's
// accuracy- and speed-against-bits panels. A Figure is a column of panels
// that share their x values; each panel has series of points, each with an
// optional shaded band (mean ± std over seeds).
package plot
