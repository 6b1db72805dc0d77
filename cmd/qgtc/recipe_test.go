package main

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

// TestQRecipe: with only dataset and model given, infer and sweep train
// with the dataset's recipe (GIN on Amazon Photo: batch norm, one batch);
// each training flag given overrides its setting, and every flag a recipe
// sets is a flag of qJobFlags.
func TestQRecipe(t *testing.T) {
	parse := func(args ...string) pipeline.Config {
		fs := newFlags("infer", io.Discard)
		var c pipeline.Config
		var quiet bool
		qJobFlags(fs, &c, &quiet)
		require.NoError(t, parseFlags(fs, args))
		qRecipe(fs, &c)
		return c
	}
	c := parse("--dataset", "amazon_photo", "--model", "gin")
	r := pipeline.RecipeFor("amazon_photo", layers.GIN)
	assert.Equal(t, layers.NormBatch, c.Norm)
	assert.Equal(t, 1, c.Parts)
	assert.Equal(t, r.Epochs, c.Epochs)
	c = parse("--dataset", "amazon_photo", "--model", "gin", "--norm", "none", "--parts", "4", "--lr", "0.02", "--patience", "0")
	assert.Equal(t, layers.NormNone, c.Norm)
	assert.Equal(t, 4, c.Parts)
	assert.Equal(t, 0.02, c.LR)
	assert.Equal(t, 0, c.Patience)
	assert.Equal(t, r.QATLR, c.QATLR, "flags not given keep the recipe's")
	c = parse("--dataset", "cora", "--model", "gin")
	assert.Equal(t, layers.NormNone, c.Norm)
	assert.Equal(t, 0, c.Parts)
	assert.Equal(t, layers.AggrMean, c.GINAggr)
	c = parse("--dataset", "cora", "--model", "gin", "--gin-aggr", "sum")
	assert.Equal(t, layers.AggrSum, c.GINAggr)
	c = parse("--dataset", "cora", "--model", "sage")
	assert.Empty(t, c.GINAggr)

	fs := newFlags("infer", io.Discard)
	var cc pipeline.Config
	var quiet bool
	qJobFlags(fs, &cc, &quiet)
	cc.UseRecipe(r, func(field string) bool {
		assert.NotNil(t, fs.Lookup(qConfigFlags[field]), "Config.%s has no flag", field)
		return false
	})
}

// TestPartitionPackScale: partition --pack-out scales the features as
// infer trains the dataset's models (Coauthor CS: rows summing to one;
// Cora: the base scale) unless --feature-scale says otherwise.
func TestPartitionPackScale(t *testing.T) {
	qCapture(t)
	dir := t.TempDir()
	for _, c := range []struct {
		dataset string
		flags   []string
		want    string
	}{
		{"coauthor_cs", nil, layers.ScaleRows},
		{"coauthor_cs", []string{"--feature-scale", "sqrt"}, layers.ScaleSqrt},
		{"cora", nil, layers.ScaleSqrt},
	} {
		file := filepath.Join(dir, fmt.Sprintf("%s-%d.qgpb", c.dataset, len(c.flags)))
		args := append([]string{"partition", "--dataset", c.dataset, "--parts", "4", "--batch", "2", "--pack-out", file, "--quiet"}, c.flags...)
		code, _, errs := runCLI(args...)
		require.Equal(t, 0, code, errs)
		pf, err := subgraph.OpenPackedBatches(file)
		require.NoError(t, err)
		assert.Equal(t, c.want, pf.Info.ScaleMode, "%s %v", c.dataset, c.flags)
		require.NoError(t, pf.Close())
	}
	assert.Equal(t, layers.ScaleRows, pipeline.RecipeFor("coauthor_cs", layers.GCN).FeatureScale)
}
