package layers

// QParams are the parameters of one uniform quantizer, with the contract of
// package quantize's Params: a value x maps to
//
//	q = clamp(floor(float32(x·Inv) + Off), 0, 2^Bits − 1)
//
// with Inv = 1/Scale and Off = −Lower/Scale each computed once in float32
// (Requant), which is exactly bmm.Requant{Scale: Inv, Offset: Off}, so a
// fused epilogue that re-quantizes gives the same codes; q dequantizes to
// Scale·(q + Zero()) with Zero() = Lower/Scale.
type QParams struct {
	Bits         int
	Scale, Lower float32
}

// Requant returns the float32 multiplier and offset of the quantizer.
func (p QParams) Requant() (inv, off float32) {
	return 1 / p.Scale, -p.Lower / p.Scale
}

// Zero is the zero point in units of Scale: x̂ = Scale·(q + Zero()).
func (p QParams) Zero() float32 { return p.Lower / p.Scale }
