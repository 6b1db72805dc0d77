package bmm

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
)

func shapeErr(dst *bittensor.Tensor, m, n int) error {
	return fmt.Errorf("%w: destination is %d×%d, product is %d×%d", ErrShape, dst.Rows(), dst.Cols(), m, n)
}

// CheckDst validates a MulBit destination for an m×n product; kernels call it.
func CheckDst(dst *bittensor.Tensor, m, n int) error {
	if dst == nil || dst.Rows() != m || dst.Cols() != n {
		if dst == nil {
			return fmt.Errorf("%w: nil destination", ErrShape)
		}
		return shapeErr(dst, m, n)
	}
	return nil
}

func shapeLenErr(got, m, n int) error {
	return fmt.Errorf("%w: destination has %d values, product is %d×%d", ErrShape, got, m, n)
}
