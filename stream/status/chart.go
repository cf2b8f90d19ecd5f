package status

import (
	"strconv"
	"strings"
)

// chart is the geometry of one inline SVG chart of a rule's error over its
// stored evaluations: the eps band (Low..High) as a rectangle, eps as a
// dashed line, the error as a polyline and the violated windows as dots.
// Every value is a number computed here, so the template writes no record
// data into the SVG.
type chart struct {
	W, H                   int
	Left, Right, Top, Base float64 // plot area
	BandY, BandH, EpsY     float64
	BandWidth, LabelX      float64
	TopLabelY, EpsLabelY   float64
	MidX, MidY             float64
	Line                   string // polyline points
	Dots                   []dot  // violated observations (every one when there are fewer than two)
	YMax, Eps, Low, High   string // axis labels
	First, Last            string // window ends of the first and last point
	Points                 int
}

type dot struct {
	X, Y     float64
	Violated bool
}

// Chart sizes: the stream page's small multiples and the rule page's
// large chart.
const (
	smallW, smallH = 360, 90
	largeW, largeH = 820, 240
	chartPadLeft   = 52
	chartPadRight  = 8
	chartPadTop    = 8
	chartPadBottom = 16
	// chartHeadroom leaves room above the highest of error and band.
	chartHeadroom = 1.15
	// chartMinY keeps a flat zero chart from dividing by zero.
	chartMinY = 1e-3
)

func newChart(points []pointJSON, b band, w, h int) chart {
	c := chart{W: w, H: h, Left: chartPadLeft, Right: float64(w - chartPadRight), Top: chartPadTop,
		Base: float64(h - chartPadBottom), Points: len(points)}
	ymax := b.High
	for _, p := range points {
		ymax = max(ymax, p.Error)
	}
	ymax = max(ymax*chartHeadroom, chartMinY)
	y := func(v float64) float64 { return round2(c.Base - (c.Base-c.Top)*min(max(v, 0), ymax)/ymax) }
	c.BandY = y(b.High)
	c.BandH = round2(y(b.Low) - c.BandY)
	c.EpsY = y(b.Eps)
	c.YMax, c.Eps, c.Low, c.High = num(ymax), num(b.Eps), num(b.Low), num(b.High)
	c.BandWidth, c.LabelX = c.Right-c.Left, c.Left-4
	c.TopLabelY, c.EpsLabelY = c.Top+8, c.EpsY+3
	c.MidX, c.MidY = (c.Left+c.Right)/2, (c.Top+c.Base)/2
	if len(points) == 0 {
		return c
	}
	step := 0.0
	if len(points) > 1 {
		step = (c.Right - c.Left) / float64(len(points)-1)
	}
	var line strings.Builder
	for i, p := range points {
		x := round2(c.Left + step*float64(i))
		if i > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
		line.WriteByte(',')
		line.WriteString(strconv.FormatFloat(y(p.Error), 'f', -1, 64))
		if p.Violated || len(points) < 2 {
			c.Dots = append(c.Dots, dot{X: x, Y: y(p.Error), Violated: p.Violated})
		}
	}
	c.Line = line.String()
	c.First = strconv.FormatUint(points[0].WindowEnd, 10)
	c.Last = strconv.FormatUint(points[len(points)-1].WindowEnd, 10)
	return c
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// num formats an error or threshold with three significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
