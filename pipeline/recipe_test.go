package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/qgtc/qgtc/layers"
)

// TestRecipeFor: GIN averages everywhere, and on the dense graphs gets its
// batch norm and one batch, by name or by path; other models and graphs
// the base recipe.
func TestRecipeFor(t *testing.T) {
	for _, ds := range []string{"amazon_photo", "/data/Amazon_Computers", "coauthor_physics"} {
		r := RecipeFor(ds, layers.GIN)
		assert.Equal(t, layers.NormBatch, r.Norm, ds)
		assert.Equal(t, 1, r.Parts, ds)
	}
	gin := baseRecipe
	gin.GINAggr = layers.AggrMean
	assert.Equal(t, gin, RecipeFor("cora", layers.GIN))
	assert.Equal(t, gin, RecipeFor("/data/some_graph.npz", layers.GIN))
	assert.Equal(t, layers.AggrMean, RecipeFor("coauthor_physics", layers.GIN).GINAggr)
	assert.Equal(t, baseRecipe, RecipeFor("amazon_computers", layers.GCN))
	assert.Empty(t, RecipeFor("cora", layers.SAGE).GINAggr)
	// CiteSeer's GIN is wider; its GCN and the other graphs' GINs are not.
	assert.Equal(t, 128, RecipeFor("/data/CiteSeer", layers.GIN).Hidden)
	assert.Equal(t, 64, RecipeFor("citeseer", layers.GCN).Hidden)
	assert.Equal(t, 64, RecipeFor("coauthor_cs", layers.GIN).Hidden)
	// Amazon Photo's GCN and SAGE decay less.
	photo := baseRecipe
	photo.WeightDecay = 1e-4
	assert.Equal(t, photo, RecipeFor("/data/Amazon_Photo", layers.GCN))
	assert.Equal(t, 1e-4, RecipeFor("amazon_photo", layers.SAGE).WeightDecay)
	assert.Equal(t, baseRecipe.WeightDecay, RecipeFor("amazon_photo", layers.GIN).WeightDecay)
	// Coauthor Physics' GCN takes 4 batches and its SAGE 2, SAGE on the
	// Amazon graphs one; the other graphs AutoParts.
	assert.Equal(t, 4, RecipeFor("/data/coauthor_physics", layers.GCN).Parts)
	assert.Equal(t, 2, RecipeFor("coauthor_physics", layers.SAGE).Parts)
	assert.Equal(t, 1, RecipeFor("amazon_computers", layers.SAGE).Parts)
	assert.Equal(t, 1, RecipeFor("/data/amazon_photo", layers.SAGE).Parts)
	assert.Equal(t, 0, RecipeFor("amazon_computers", layers.GCN).Parts)
	assert.Equal(t, 0, RecipeFor("coauthor_cs", layers.SAGE).Parts)
	assert.Equal(t, 0, RecipeFor("coauthor_cs", layers.GCN).Parts)
	// Coauthor CS's rows sum to one; the other graphs keep the base scale.
	for _, m := range []string{layers.GCN, layers.GIN, layers.SAGE} {
		assert.Equal(t, layers.ScaleRows, RecipeFor("/data/Coauthor_CS", m).FeatureScale, m)
		assert.Equal(t, layers.ScaleSqrt, RecipeFor("coauthor_physics", m).FeatureScale, m)
		assert.Equal(t, layers.ScaleSqrt, RecipeFor("amazon_computers", m).FeatureScale, m)
	}
	c := DefaultConfig("amazon_photo")
	c.Model = layers.GIN
	c.UseRecipe(RecipeFor(c.Dataset, c.Model), nil)
	assert.NoError(t, c.Check())
}

// TestUseRecipeKeeps: the fields a front end reports as set keep their
// values, the others take the recipe's; a partition file keeps Parts.
func TestUseRecipeKeeps(t *testing.T) {
	c := DefaultConfig("amazon_photo")
	c.Model, c.LR, c.Epochs, c.Parts = layers.GIN, 0.05, 7, 0
	c.UseRecipe(RecipeFor(c.Dataset, c.Model), func(f string) bool { return f == "LR" || f == "Epochs" })
	assert.Equal(t, 0.05, c.LR)
	assert.Equal(t, 7, c.Epochs)
	assert.Equal(t, layers.NormBatch, c.Norm)
	assert.Equal(t, 1, c.Parts)
	c.Parts, c.PartitionFile = 0, "parts.qgpart"
	c.UseRecipe(RecipeFor(c.Dataset, c.Model), nil)
	assert.Equal(t, 0, c.Parts, "a partition file's K is the job's")
	c = DefaultConfig("coauthor_cs")
	c.FeatureScale = layers.ScaleMean
	c.UseRecipe(RecipeFor(c.Dataset, c.Model), func(f string) bool { return f == "FeatureScale" })
	assert.Equal(t, layers.ScaleMean, c.FeatureScale, "a scale the user gave")
	c.UseRecipe(RecipeFor(c.Dataset, c.Model), nil)
	assert.Equal(t, layers.ScaleRows, c.FeatureScale)
}
