package plot

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fig() *Figure {
	return &Figure{Title: "acc & speed", XLabel: "bits", XTicks: []string{"1", "2", "4", "8"},
		Panels: []Panel{
			{Title: "accuracy", YLabel: "%", Series: []Series{{Name: "gcn", Y: []float64{40, 70, 80, math.NaN()}, Err: []float64{1, 2, 0.5, 0}, Color: Palette[0]}}},
			{Title: "speed", YLabel: "nodes/s", LogY: true, Series: []Series{{Name: "gcn", Y: []float64{1e6, 5e5, 2e5, 1e5}, Color: Palette[1]}}},
		}}
}

func TestSVG(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, fig().WriteSVG(&b))
	s := b.String()
	assert.True(t, strings.HasPrefix(s, "<svg"))
	assert.Contains(t, s, "acc &amp; speed")
	assert.Equal(t, 2, strings.Count(s, "<polyline"))
	assert.Equal(t, 7, strings.Count(s, "<circle"), "NaN points are skipped")
}

func TestPNG(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, fig().WritePNG(&b))
	img, err := png.Decode(&b)
	require.NoError(t, err)
	assert.Equal(t, width, img.Bounds().Dx())
	// The first series' colour appears somewhere.
	found := false
	for y := 0; y < img.Bounds().Dy() && !found; y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 31 && g>>8 == 119 && bl>>8 == 180 {
				found = true
				break
			}
		}
	}
	assert.True(t, found)
}

func TestEmpty(t *testing.T) {
	var b bytes.Buffer
	assert.ErrorIs(t, (&Figure{}).WriteSVG(&b), ErrEmpty)
	f := fig()
	f.Panels[0].Series[0].Y = f.Panels[0].Series[0].Y[:2]
	assert.ErrorIs(t, f.WritePNG(&b), ErrEmpty)
}

// TestBand: a series with Err gets a shaded band (mean ± Err) under its
// line, broken where a point is missing; a lone point gets a bar; a series
// without Err gets none.
func TestBand(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, fig().WriteSVG(&b))
	s := b.String()
	require.Equal(t, 1, strings.Count(s, `<polygon class="band"`), s)
	poly := s[strings.Index(s, `<polygon class="band"`):]
	poly = poly[:strings.Index(poly, "/>")]
	pts := poly[strings.Index(poly, `points="`)+8:]
	pts = pts[:strings.Index(pts, `"`)]
	assert.Len(t, strings.Fields(pts), 6, "three points up, three back down: %s", pts)
	assert.Contains(t, poly, `fill="#1f77b4"`)
	assert.Contains(t, poly, `fill-opacity="0.2"`)
	assert.Less(t, strings.Index(s, "<polygon"), strings.Index(s, "<polyline"), "the band lies under the lines")

	lone := fig()
	lone.Panels[0].Series[0].Y = []float64{40, math.NaN(), 80, math.NaN()}
	b.Reset()
	require.NoError(t, lone.WriteSVG(&b))
	assert.NotContains(t, b.String(), "<polygon")
	assert.Equal(t, 2, strings.Count(b.String(), `<line class="band"`), "two lone points, two bars")

	none := fig()
	none.Panels[0].Series[0].Err = nil
	b.Reset()
	require.NoError(t, none.WriteSVG(&b))
	assert.NotContains(t, b.String(), `class="band"`)

	// The PNG shades the same band: the series colour at 20% over white.
	b.Reset()
	require.NoError(t, fig().WritePNG(&b))
	img, err := png.Decode(&b)
	require.NoError(t, err)
	shaded := 0
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == 210 && g>>8 == 228 && bl>>8 == 240 {
				shaded++
			}
		}
	}
	assert.Greater(t, shaded, 100)
	b.Reset()
	require.NoError(t, none.WritePNG(&b))
	img, err = png.Decode(&b)
	require.NoError(t, err)
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			require.False(t, r>>8 == 210 && g>>8 == 228 && bl>>8 == 240, "shade without Err at %d,%d", x, y)
		}
	}
}
