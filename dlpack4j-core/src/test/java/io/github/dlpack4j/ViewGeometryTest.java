package io.github.dlpack4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The geometry of views on its own: offsets, shapes and strides computed from numbers alone,
 * without a tensor or a byte of tensor memory.
 */
class ViewGeometryTest {
    private static final long[] ROW_MAJOR_2X3 = {3, 1};
    private static final DataType F32 = DataType.FLOAT32;
    private static final DataType F4 = DataType.FLOAT4_E2M1FN;

    private static void assertView(ViewGeometry.View v, long offset, long[] shape, long[] strides) {
        assertThat(v.offset()).as("offset").isEqualTo(offset);
        assertThat(v.shape()).as("shape").containsExactly(shape);
        assertThat(v.strides()).as("strides").containsExactly(strides);
    }

    private static long[] longs(long... values) {
        return values;
    }

    // ---------------------------------------------------------------- dimensions

    @Test
    void aNegativeDimensionCountsFromTheLast() {
        assertThat(ViewGeometry.checkDim(-1, 3)).isEqualTo(2);
        assertThat(ViewGeometry.checkDim(-3, 3)).isZero();
        assertThat(ViewGeometry.checkDim(1, 3)).isEqualTo(1);
    }

    @Test
    void aDimensionPastEitherEndIsRefusedWithTheRankInTheMessage() {
        assertThatThrownBy(() -> ViewGeometry.checkDim(3, 3)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("dimension 3 out of range for a 3-d tensor");
        assertThatThrownBy(() -> ViewGeometry.checkDim(-4, 3)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("dimension -4 out of range for a 3-d tensor");
        assertThatThrownBy(() -> ViewGeometry.checkDim(0, 0)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("dimension 0 out of range for a 0-d tensor");
    }

    @Test
    void theOffsetOfAnIndexAlongOneDimensionIsInBytesEvenForNegativeStrides() {
        assertThat(ViewGeometry.offsetOf(8, longs(3, 1), 0, 1, F32, false)).isEqualTo(8 + 12);
        assertThat(ViewGeometry.offsetOf(40, longs(-2), 0, 3, DataType.FLOAT64, false)).isEqualTo(40 - 48);
        assertThat(ViewGeometry.offsetOf(1, longs(1), 0, 4, F4, true)).isEqualTo(1 + 2);
    }

    @Test
    void aPackedOffsetInsideAByteIsRefusedAndAnOverflowingOneThrows() {
        assertThatThrownBy(() -> ViewGeometry.offsetOf(0, longs(1), 0, 3, F4, true))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessage("this view of packed " + F4 + " data would start inside a byte; copy() the elements first");
        assertThatThrownBy(() -> ViewGeometry.offsetOf(0, longs(Long.MAX_VALUE / 2), 0, 3, F32, false))
                .isInstanceOf(ArithmeticException.class);
    }

    // ---------------------------------------------------------------- slice

    @Test
    void aSliceWithAStepTakesEveryStepthElementFromItsStart() {
        ViewGeometry.View v = ViewGeometry.slice(16, longs(10), longs(1), F32, false, 0, 1, 8, 3);
        assertView(v, 16 + 4, longs(3), longs(3));
    }

    @Test
    void aSliceOfOneDimensionLeavesTheOthersAlone() {
        ViewGeometry.View v = ViewGeometry.slice(0, longs(3, 4), longs(4, 1), F32, false, -1, 0, 4, 2);
        assertView(v, 0, longs(3, 2), longs(4, 2));
    }

    @Test
    void aNegativeStepStartsAtTheLastIndexTakenAndWalksBackwards() {
        ViewGeometry.View reversed = ViewGeometry.slice(0, longs(10), longs(1), F32, false, 0, -1, Long.MIN_VALUE, -1);
        assertView(reversed, 9 * 4, longs(10), longs(-1));
        ViewGeometry.View everyOther = ViewGeometry.slice(0, longs(10), longs(2), F32, false, 0, 8, 2, -2);
        assertView(everyOther, 8 * 2 * 4, longs(3), longs(-4));
    }

    @Test
    void sliceBoundsOutOfRangeAreClippedAsInPython() {
        assertView(ViewGeometry.slice(0, longs(4), longs(1), F32, false, 0, -100, 100, 1), 0, longs(4), longs(1));
        assertView(ViewGeometry.slice(0, longs(4), longs(1), F32, false, 0, -3, Long.MAX_VALUE, 1), 4, longs(3), longs(1));
    }

    @Test
    void anEmptySliceKeepsTheOffsetOfWhatItWasCutFrom() {
        assertView(ViewGeometry.slice(12, longs(5), longs(1), F32, false, 0, 3, 3, 1), 12, longs(0), longs(1));
        assertView(ViewGeometry.slice(12, longs(5), longs(1), F32, false, 0, 1, 4, -1), 12, longs(0), longs(-1));
        assertView(ViewGeometry.slice(12, longs(0, 5), longs(5, 1), F32, false, 1, 2, 5, 1), 12, longs(0, 3), longs(5, 1));
    }

    @Test
    void aSliceRefusesAZeroStepAMissingDimensionAndAnOverflowingStride() {
        assertThatThrownBy(() -> ViewGeometry.slice(0, longs(4), longs(1), F32, false, 0, 0, 4, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("slice step cannot be zero");
        assertThatThrownBy(() -> ViewGeometry.slice(0, longs(4), longs(1), F32, false, 1, 0, 4, 1))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("dimension 1 out of range for a 1-d tensor");
        assertThatThrownBy(() -> ViewGeometry.slice(0, longs(4), longs(Long.MAX_VALUE), F32, false, 0, 0, 4, 2))
                .isInstanceOf(ArithmeticException.class);
    }

    @Test
    void aPackedSliceMustStartOnAWholeByte() {
        assertView(ViewGeometry.slice(0, longs(6), longs(1), F4, true, 0, 2, 6, 1), 1, longs(4), longs(1));
        assertThatThrownBy(() -> ViewGeometry.slice(0, longs(6), longs(1), F4, true, 0, 1, 3, 1))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("copy()");
    }

    // ---------------------------------------------------------------- select and flip

    @Test
    void selectDropsTheDimensionAndMovesToTheIndex() {
        assertView(ViewGeometry.select(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 0, 1), 12, longs(3), longs(1));
        assertView(ViewGeometry.select(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, -1, -1), 8, longs(2), longs(3));
        assertView(ViewGeometry.select(4, longs(5), longs(1), F32, false, 0, 2), 12, longs(), longs());
    }

    @Test
    void selectOutsideTheDimensionIsRefusedWithItsExtent() {
        assertThatThrownBy(() -> ViewGeometry.select(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 0, 2))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("index 2 out of range for dimension 0 of extent 2");
        assertThatThrownBy(() -> ViewGeometry.select(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 1, -4))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("index -4 out of range for dimension 1 of extent 3");
        assertThatThrownBy(() -> ViewGeometry.select(0, longs(), longs(), F32, false, 0, 0))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("dimension 0 out of range for a 0-d tensor");
    }

    @Test
    void selectingFromATensorWithoutElementsKeepsItsOffset() {
        assertView(ViewGeometry.select(4, longs(3, 0), longs(5, 1), F32, false, 0, 2), 4, longs(0), longs(1));
    }

    @Test
    void flipStartsAtTheLastIndexAndNegatesTheStride() {
        assertView(ViewGeometry.flip(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 1), 8, longs(2, 3), longs(3, -1));
        assertView(ViewGeometry.flip(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 0), 12, longs(2, 3), longs(-3, 1));
        assertView(ViewGeometry.flip(8, longs(4), longs(-1), F32, false, 0), 8 - 12, longs(4), longs(1));
    }

    @Test
    void flippingAnEmptyDimensionStaysPut() {
        assertView(ViewGeometry.flip(20, longs(0, 3), longs(3, 1), F32, false, 0), 20, longs(0, 3), longs(-3, 1));
        assertThatThrownBy(() -> ViewGeometry.flip(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, 2))
                .isInstanceOf(IndexOutOfBoundsException.class);
    }

    // ---------------------------------------------------------------- permute and transpose

    @Test
    void permuteReordersShapeAndStridesTogetherAndKeepsTheOffset() {
        assertView(ViewGeometry.permute(24, longs(2, 3, 4), longs(12, 4, 1), 2, 0, 1), 24, longs(4, 2, 3), longs(1, 12, 4));
        assertView(ViewGeometry.permute(24, longs(2, 3, 4), longs(12, 4, 1), -1, -3, -2), 24, longs(4, 2, 3), longs(1, 12, 4));
    }

    @Test
    void permuteRefusesWhatIsNotAPermutation() {
        long[] shape = {2, 3, 4};
        long[] strides = {12, 4, 1};
        assertThatThrownBy(() -> ViewGeometry.permute(0, shape, strides, 0, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("permute needs 3 dimensions, got [0, 1]");
        assertThatThrownBy(() -> ViewGeometry.permute(0, shape, strides, 0, 0, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("repeated dimension in [0, 0, 1]");
        assertThatThrownBy(() -> ViewGeometry.permute(0, shape, strides, 0, -3, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("repeated dimension in [0, -3, 1]");
        assertThatThrownBy(() -> ViewGeometry.permute(0, shape, strides, 0, 1, 3))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("dimension 3 out of range for a 3-d tensor");
    }

    @Test
    void transposeReversesEveryDimensionAndLeavesAScalarAlone() {
        assertView(ViewGeometry.transpose(4, longs(2, 3, 4), longs(12, 4, 1)), 4, longs(4, 3, 2), longs(1, 4, 12));
        assertView(ViewGeometry.transpose(4, longs(), longs()), 4, longs(), longs());
    }

    @Test
    void transposeOfTwoDimensionsSwapsOnlyThose() {
        assertView(ViewGeometry.transpose(0, longs(2, 3, 4), longs(12, 4, 1), 0, -1), 0, longs(4, 3, 2), longs(1, 4, 12));
        assertView(ViewGeometry.transpose(0, longs(2, 3, 4), longs(12, 4, 1), 1, 1), 0, longs(2, 3, 4), longs(12, 4, 1));
        assertThatThrownBy(() -> ViewGeometry.transpose(0, longs(2, 3), ROW_MAJOR_2X3, 0, 2))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("dimension 2 out of range for a 2-d tensor");
    }

    // ---------------------------------------------------------------- reshape

    @Test
    void aContiguousReshapeTakesRowMajorStridesAndInfersOneMinusOne() {
        assertView(ViewGeometry.reshape(8, longs(3, 4), longs(4, 1), false, longs(4, 3)), 8, longs(4, 3), longs(3, 1));
        assertView(ViewGeometry.reshape(8, longs(3, 4), longs(4, 1), false, longs(2, -1)), 8, longs(2, 6), longs(6, 1));
        assertView(ViewGeometry.reshape(8, longs(3, 4), longs(4, 1), false, longs(12, 1)), 8, longs(12, 1), longs(1, 1));
    }

    @Test
    void aStridedViewReshapesWithoutACopyWhereItsRunsOfDimensionsAllow() {
        // every other column of a [3, 4]: shape [3, 2], strides [4, 2], merged into one dimension of stride 2
        assertView(ViewGeometry.reshape(0, longs(3, 2), longs(4, 2), false, longs(6)), 0, longs(6), longs(2));
        // rows of eight out of a wider block, split in two
        assertView(ViewGeometry.reshape(0, longs(2, 8), longs(16, 1), false, longs(2, 2, 4)), 0, longs(2, 2, 4), longs(16, 4, 1));
    }

    @Test
    void aStridedViewThatCannotBeReshapedWithoutACopySaysSo() {
        assertThatThrownBy(() -> ViewGeometry.reshape(0, longs(3, 2), longs(1, 3), false, longs(6)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("cannot reshape a tensor of shape [3, 2] and strides [1, 3] to [6] without copying; "
                        + "use copy().reshape(...)");
        assertThatThrownBy(() -> ViewGeometry.reshape(0, longs(2, 8), longs(16, 1), false, longs(16)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without copying");
    }

    @Test
    void aReshapeToAnotherElementCountIsRefused() {
        assertThatThrownBy(() -> ViewGeometry.reshape(0, longs(2, 3), ROW_MAJOR_2X3, false, longs(4, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("cannot reshape 6 elements to [4, 2]");
        assertThatThrownBy(() -> ViewGeometry.reshape(0, longs(2, 3), ROW_MAJOR_2X3, false, longs(-1, 4)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("cannot infer -1 in [-1, 4] for 6 elements");
        assertThatThrownBy(() -> ViewGeometry.reshape(0, longs(2, 3), ROW_MAJOR_2X3, false, longs(-1, -1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("invalid shape [-1, -1]");
    }

    @Test
    void packedDataAlwaysReshapesToRowMajorStrides() {
        assertView(ViewGeometry.reshape(3, longs(6), longs(1), true, longs(2, 3)), 3, longs(2, 3), longs(3, 1));
    }

    // ---------------------------------------------------------------- broadcastTo

    @Test
    void broadcastingRepeatsByZeroStridesOnNewAndExtentOneDimensions() {
        assertView(ViewGeometry.broadcastTo(4, longs(3), longs(1), longs(2, 3)), 4, longs(2, 3), longs(0, 1));
        assertView(ViewGeometry.broadcastTo(4, longs(3, 1), longs(1, 1), longs(3, 5)), 4, longs(3, 5), longs(1, 0));
        assertView(ViewGeometry.broadcastTo(4, longs(), longs(), longs(2, 2)), 4, longs(2, 2), longs(0, 0));
    }

    @Test
    void broadcastingRefusesIncompatibleShapesFewerDimensionsAndNegativeExtents() {
        assertThatThrownBy(() -> ViewGeometry.broadcastTo(0, longs(3), longs(1), longs(4)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("cannot broadcast [3] to [4]");
        assertThatThrownBy(() -> ViewGeometry.broadcastTo(0, longs(2, 3), ROW_MAJOR_2X3, longs(3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("cannot broadcast [2, 3] to fewer dimensions [3]");
        assertThatThrownBy(() -> ViewGeometry.broadcastTo(0, longs(3), longs(1), longs(-1, 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("negative extent in [-1, 3]");
    }

    // ---------------------------------------------------------------- element positions

    @Test
    void anElementsPositionIsItsByteOffsetThroughTheStrides() {
        assertThat(ViewGeometry.position(8, longs(2, 3), ROW_MAJOR_2X3, F32, false, longs(1, 2))).isEqualTo(8 + 5 * 4);
        assertThat(ViewGeometry.position(8, longs(2, 3), longs(1, 2), F32, false, longs(1, 2))).isEqualTo(8 + 5 * 4);
        assertThat(ViewGeometry.position(40, longs(4), longs(-1), DataType.FLOAT64, false, longs(3))).isEqualTo(40 - 24);
        assertThat(ViewGeometry.position(40, longs(4, 3), longs(0, 1), F32, false, longs(3, 1))).isEqualTo(44);
        assertThat(ViewGeometry.position(40, longs(), longs(), F32, false, longs())).isEqualTo(40);
    }

    @Test
    void aPackedElementsPositionIsItsBitOffset() {
        assertThat(ViewGeometry.position(2, longs(2, 4), longs(4, 1), F4, true, longs(1, 3))).isEqualTo(2 * 8 + 7 * 4);
    }

    @Test
    void anIndexOutOfBoundsOrOfAnotherRankIsRefused() {
        assertThatThrownBy(() -> ViewGeometry.position(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, longs(2, 0)))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("index [2, 0] out of bounds for shape [2, 3]");
        assertThatThrownBy(() -> ViewGeometry.position(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, longs(0, -1)))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessage("index [0, -1] out of bounds for shape [2, 3]");
        assertThatThrownBy(() -> ViewGeometry.position(0, longs(2, 3), ROW_MAJOR_2X3, F32, false, longs(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("a 2-d tensor needs 2 indices, got 1");
        assertThatThrownBy(() -> ViewGeometry.checkRank(0, longs(0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("a 0-d tensor needs 0 indices, got 1");
    }

    private static List<long[]> visited(long offset, long[] shape, long[] strides, DataType dtype, boolean packed) {
        List<long[]> out = new ArrayList<>();
        ViewGeometry.forEachPosition(offset, shape, strides, dtype, packed, (i, pos) -> out.add(new long[] {i, pos}));
        return out;
    }

    @Test
    void everyPositionIsVisitedInRowMajorOrderThroughAnyStrides() {
        assertThat(visited(0, longs(3, 2), longs(1, 3), F32, false))
                .containsExactly(longs(0, 0), longs(1, 12), longs(2, 4), longs(3, 16), longs(4, 8), longs(5, 20));
        assertThat(visited(12, longs(2, 2), longs(-2, -1), F32, false))
                .containsExactly(longs(0, 12), longs(1, 8), longs(2, 4), longs(3, 0));
        assertThat(visited(0, longs(2, 3), longs(0, 1), F32, false))
                .containsExactly(longs(0, 0), longs(1, 4), longs(2, 8), longs(3, 0), longs(4, 4), longs(5, 8));
    }

    @Test
    void visitingPositionsMatchesPositionForEachIndex() {
        long[] shape = {2, 3, 2};
        long[] strides = {1, 4, -2};
        List<long[]> all = visited(64, shape, strides, DataType.INT16, false);
        int n = 0;
        for (long a = 0; a < 2; a++) {
            for (long b = 0; b < 3; b++) {
                for (long c = 0; c < 2; c++, n++) {
                    assertThat(all.get(n)).containsExactly(n,
                            ViewGeometry.position(64, shape, strides, DataType.INT16, false, longs(a, b, c)));
                }
            }
        }
        assertThat(all).hasSize(n);
    }

    @Test
    void aScalarIsVisitedOnceAnEmptyTensorNeverAndPackedDataByBits() {
        assertThat(visited(24, longs(), longs(), F32, false)).containsExactly(longs(0, 24));
        assertThat(visited(24, longs(3, 0), longs(1, 1), F32, false)).isEmpty();
        assertThat(visited(1, longs(3), longs(1), F4, true)).containsExactly(longs(0, 8), longs(1, 12), longs(2, 16));
    }
}
