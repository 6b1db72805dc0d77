package plot

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// ErrEmpty: a figure with nothing to draw.
var ErrEmpty = errors.New("plot: nothing to draw")

// Series is one line of a panel; Err (same length as Y, or nil) shades a
// band from Y-Err to Y+Err around the line (a lone point gets a bar).
type Series struct {
	Name  string
	Y     []float64
	Err   []float64
	Color color.RGBA
}

// Panel is one chart with a y axis of its own.
type Panel struct {
	Title  string
	YLabel string
	LogY   bool
	Series []Series
}

// Figure is a column of panels over shared x values (drawn evenly spaced,
// labelled with XTicks).
type Figure struct {
	Title  string
	XLabel string
	XTicks []string
	Panels []Panel
}

// Palette holds distinct series colours.
var Palette = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255}, {255, 127, 14, 255}}

const (
	width   = 640
	panelH  = 260
	marginL = 80
	marginR = 150
	marginT = 40
	marginB = 40
)

type frame struct {
	x0, y0, w, h float64 // plot area
	lo, hi       float64
	log          bool
	n            int
}

func (f *frame) px(i int) float64 {
	if f.n == 1 {
		return f.x0 + f.w/2
	}
	return f.x0 + f.w*float64(i)/float64(f.n-1)
}

func (f *frame) py(v float64) float64 {
	lo, hi := f.lo, f.hi
	if f.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return f.y0 + f.h - f.h*(v-lo)/(hi-lo)
}

func (fig *Figure) check() error {
	if len(fig.XTicks) == 0 || len(fig.Panels) == 0 {
		return ErrEmpty
	}
	for _, p := range fig.Panels {
		for _, s := range p.Series {
			if len(s.Y) != len(fig.XTicks) || (s.Err != nil && len(s.Err) != len(s.Y)) {
				return fmt.Errorf("%w: series %q has %d points for %d x values", ErrEmpty, s.Name, len(s.Y), len(fig.XTicks))
			}
		}
	}
	return nil
}

func (fig *Figure) frames() []frame {
	var out []frame
	for i, p := range fig.Panels {
		f := frame{x0: marginL, y0: float64(marginT + i*panelH + 20), w: width - marginL - marginR, h: panelH - 60, log: p.LogY, n: len(fig.XTicks)}
		f.lo, f.hi = math.Inf(1), math.Inf(-1)
		for _, s := range p.Series {
			for j, y := range s.Y {
				if !f.drawable(s, j) {
					continue
				}
				e := spread(s, j)
				if f.log && y-e <= 0 {
					f.lo = math.Min(f.lo, y) // the band runs off the bottom
				} else {
					f.lo = math.Min(f.lo, y-e)
				}
				f.hi = math.Max(f.hi, y+e)
			}
		}
		if math.IsInf(f.lo, 0) {
			f.lo, f.hi = 0, 1
		}
		if f.log {
			f.lo = math.Max(f.lo, 1e-12)
			f.lo, f.hi = f.lo/1.5, f.hi*1.5
		} else {
			pad := (f.hi - f.lo) * 0.08
			if pad == 0 {
				pad = math.Max(1, math.Abs(f.hi)*0.1)
			}
			f.lo, f.hi = f.lo-pad, f.hi+pad
		}
		out = append(out, f)
	}
	return out
}

func (f *frame) ticks() []float64 {
	if f.log {
		// Decades, or 1-2-5 steps, or every digit: the first that puts at
		// least two ticks on a narrow range.
		var t []float64
		for _, mant := range [][]float64{{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
			t = t[:0]
			for e := math.Floor(math.Log10(f.lo)); e <= math.Ceil(math.Log10(f.hi)); e++ {
				for _, m := range mant {
					if v := m * math.Pow(10, e); v >= f.lo && v <= f.hi {
						t = append(t, v)
					}
				}
			}
			if len(t) >= 2 {
				break
			}
		}
		return t
	}
	step := math.Pow(10, math.Floor(math.Log10((f.hi-f.lo)/4)))
	for (f.hi-f.lo)/step > 8 {
		step *= 2
	}
	var t []float64
	for v := math.Ceil(f.lo/step) * step; v <= f.hi; v += step {
		t = append(t, v)
	}
	return t
}

// bandAlpha is the opacity of a band over the background.
const bandAlpha = 0.2

// drawable reports whether point i of s can be placed on f.
func (f *frame) drawable(s Series, i int) bool {
	y := s.Y[i]
	return !math.IsNaN(y) && !math.IsInf(y, 0) && !(f.log && y <= 0)
}

// runs splits s's drawable points into runs of consecutive indices; a
// missing point breaks the line and its band.
func (f *frame) runs(s Series) [][]int {
	var out [][]int
	var cur []int
	for i := range s.Y {
		if f.drawable(s, i) {
			cur = append(cur, i)
			continue
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// spread is point i's ±Err, 0 when none; hasSpread says whether the run
// has any.
func spread(s Series, i int) float64 {
	if s.Err == nil || !(s.Err[i] > 0) || math.IsInf(s.Err[i], 0) {
		return 0
	}
	return s.Err[i]
}

func hasSpread(s Series, run []int) bool {
	for _, i := range run {
		if spread(s, i) > 0 {
			return true
		}
	}
	return false
}

// edges are the pixel rows of point i's band: y+Err (top) and y-Err
// (bottom), the latter held inside the frame on a log axis.
func (f *frame) edges(s Series, i int) (top, bottom float64) {
	y, e := s.Y[i], spread(s, i)
	lo := y - e
	if f.log && lo <= 0 {
		lo = f.lo
	}
	return f.py(y + e), f.py(lo)
}

func label(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%.4g", v)
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// WriteSVG draws fig as an SVG document.
func (fig *Figure) WriteSVG(w io.Writer) error {
	if err := fig.check(); err != nil {
		return err
	}
	h := marginT + len(fig.Panels)*panelH + marginB
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, h, width, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", marginL, esc(fig.Title))
	for pi, f := range fig.frames() {
		p := fig.Panels[pi]
		fmt.Fprintf(&b, `<text x="%g" y="%g" font-weight="bold">%s</text>`+"\n", f.x0, f.y0-6, esc(p.Title))
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n", f.x0, f.y0, f.w, f.h)
		for _, t := range f.ticks() {
			y := f.py(t)
			fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", f.x0, y, f.x0+f.w, y)
			fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n", f.x0-6, y+4, label(t))
		}
		for i, tk := range fig.XTicks {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", f.px(i), f.y0+f.h+16, esc(tk))
		}
		fmt.Fprintf(&b, `<text transform="translate(%g,%g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", f.x0-55, f.y0+f.h/2, esc(p.YLabel))
		// Bands under every line, so no band hides another series' line.
		for _, s := range p.Series {
			for _, run := range f.runs(s) {
				if !hasSpread(s, run) {
					continue
				}
				if len(run) == 1 {
					i := run[0]
					top, bottom := f.edges(s, i)
					fmt.Fprintf(&b, `<line class="band" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", f.px(i), bottom, f.px(i), top, hex(s.Color))
					continue
				}
				pts := make([]string, 0, 2*len(run))
				for _, i := range run {
					top, _ := f.edges(s, i)
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(i), top))
				}
				for j := len(run) - 1; j >= 0; j-- {
					_, bottom := f.edges(s, run[j])
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(run[j]), bottom))
				}
				fmt.Fprintf(&b, `<polygon class="band" points="%s" fill="%s" fill-opacity="%g" stroke="none"/>`+"\n", strings.Join(pts, " "), hex(s.Color), bandAlpha)
			}
		}
		for si, s := range p.Series {
			c := hex(s.Color)
			var pts []string
			for i, y := range s.Y {
				if !f.drawable(s, i) {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(i), f.py(y)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", f.px(i), f.py(y), c)
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
			ly := f.y0 + 14 + float64(si)*18
			fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/>`+"\n", f.x0+f.w+10, ly-4, f.x0+f.w+30, ly-4, c)
			fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", f.x0+f.w+35, ly, esc(s.Name))
		}
	}
	fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", float64(marginL)+float64(width-marginL-marginR)/2, h-8, esc(fig.XLabel))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePNG draws fig as a PNG: the same title, frames, grid, lines, points,
// bands, tick values, axis labels and legend as the SVG, in the Go
// team's 7×13 bitmap font.
func (fig *Figure) WritePNG(w io.Writer) error {
	if err := fig.check(); err != nil {
		return err
	}
	h := marginT + len(fig.Panels)*panelH + marginB
	img := image.NewRGBA(image.Rect(0, 0, width, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	grey := color.RGBA{68, 68, 68, 255}
	light := color.RGBA{221, 221, 221, 255}
	black := color.RGBA{0, 0, 0, 255}
	text(img, marginL, 12, fig.Title, black, false)
	for pi, f := range fig.frames() {
		p := fig.Panels[pi]
		text(img, int(f.x0), int(f.y0)-17, p.Title, black, false)
		textUp(img, int(f.x0)-62, int(f.y0+f.h/2), p.YLabel, grey)
		for _, t := range f.ticks() {
			y := f.py(t)
			line(img, f.x0, y, f.x0+f.w, y, light)
			text(img, int(f.x0)-6, int(y)-2, label(t), grey, true)
		}
		x1, y1 := f.x0+f.w, f.y0+f.h
		line(img, f.x0, f.y0, x1, f.y0, grey)
		line(img, f.x0, y1, x1, y1, grey)
		line(img, f.x0, f.y0, f.x0, y1, grey)
		line(img, x1, f.y0, x1, y1, grey)
		for i, tk := range fig.XTicks {
			text(img, int(f.px(i))+len(tk)*2, int(y1)+6, tk, grey, true)
		}
		for _, s := range p.Series {
			for _, run := range f.runs(s) {
				if !hasSpread(s, run) {
					continue
				}
				if len(run) == 1 {
					top, bottom := f.edges(s, run[0])
					line(img, f.px(run[0]), bottom, f.px(run[0]), top, s.Color)
					continue
				}
				for j := 0; j+1 < len(run); j++ {
					band(img, &f, s, run[j], run[j+1])
				}
			}
		}
		for si, s := range p.Series {
			px, py := math.NaN(), math.NaN()
			for i, y := range s.Y {
				if !f.drawable(s, i) {
					continue
				}
				x, yy := f.px(i), f.py(y)
				if !math.IsNaN(px) {
					thick(img, px, py, x, yy, s.Color)
				}
				dot(img, x, yy, s.Color)
				px, py = x, yy
			}
			ly := f.y0 + 10 + float64(si)*16
			thick(img, x1+10, ly, x1+30, ly, s.Color)
			text(img, int(x1)+35, int(ly)-6, s.Name, black, false)
		}
	}
	text(img, marginL+(width-marginL-marginR)/2-len(fig.XLabel)*7/2, h-22, fig.XLabel, black, false)
	return png.Encode(w, img)
}

func line(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA) {
	n := int(math.Max(math.Abs(x1-x0), math.Abs(y1-y0))) + 1
	for i := 0; i <= n; i++ {
		t := float64(i) / float64(n)
		img.SetRGBA(int(x0+(x1-x0)*t+0.5), int(y0+(y1-y0)*t+0.5), c)
	}
}

// band shades the band of s between points i and j, column by column,
// blending its colour over what is drawn; each pixel is shaded once.
func band(img *image.RGBA, f *frame, s Series, i, j int) {
	x0, x1 := f.px(i), f.px(j)
	t0, b0 := f.edges(s, i)
	t1, b1 := f.edges(s, j)
	// Columns [ceil(x0), ceil(x1)): the next segment starts where this ends.
	for x := int(math.Ceil(x0)); float64(x) < x1; x++ {
		u := (float64(x) - x0) / (x1 - x0)
		top, bottom := t0+(t1-t0)*u, b0+(b1-b0)*u
		for y := int(math.Round(top)); y <= int(math.Round(bottom)); y++ {
			if !(image.Point{x, y}.In(img.Rect)) {
				continue
			}
			p := img.RGBAAt(x, y)
			mix := func(a, c uint8) uint8 { return uint8(math.Round(float64(a)*(1-bandAlpha) + float64(c)*bandAlpha)) }
			img.SetRGBA(x, y, color.RGBA{mix(p.R, s.Color.R), mix(p.G, s.Color.G), mix(p.B, s.Color.B), 255})
		}
	}
}

func thick(img *image.RGBA, x0, y0, x1, y1 float64, c color.RGBA) {
	line(img, x0, y0, x1, y1, c)
	line(img, x0, y0+1, x1, y1+1, c)
}

func dot(img *image.RGBA, x, y float64, c color.RGBA) {
	for dy := -3; dy <= 3; dy++ {
		for dx := -3; dx <= 3; dx++ {
			if dx*dx+dy*dy <= 10 {
				img.SetRGBA(int(x+0.5)+dx, int(y+0.5)+dy, c)
			}
		}
	}
}

// glyphW is the advance of basicfont.Face7x13.
const glyphW = 7

// text draws s with its top at y and its right edge at x when right, else
// its left edge.
func text(img *image.RGBA, x, y int, s string, c color.RGBA, right bool) {
	if right {
		x -= len(s) * glyphW
	}
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13,
		Dot: fixed.P(x, y+basicfont.Face7x13.Ascent)}
	d.DrawString(s)
}

// textUp draws s rotated a quarter turn anticlockwise, centred on (x, y):
// the y-axis label.
func textUp(img *image.RGBA, x, y int, s string, c color.RGBA) {
	w, h := len(s)*glyphW, basicfont.Face7x13.Height
	tmp := image.NewRGBA(image.Rect(0, 0, w, h))
	text(tmp, 0, 0, s, c, false)
	for ty := 0; ty < h; ty++ {
		for tx := 0; tx < w; tx++ {
			if px := tmp.RGBAAt(tx, ty); px.A != 0 {
				img.SetRGBA(x+ty-h/2, y+w/2-tx, px)
			}
		}
	}
}
