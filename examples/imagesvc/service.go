package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"image"
	"image/png"
	"net/http"
	"regexp"
	"strconv"

	"github.com/poolparity/poolparity/instrument"
)

// The pool modes the service knows: the values of POOL_MODE and of the
// pool_mode label.
const (
	// ModeUnpooled allocates every image, encoder state and output buffer.
	ModeUnpooled = instrument.PoolModeUnpooled
	// ModePooled takes them from instrumented sync.Pools.
	ModePooled = instrument.PoolModePooled
	// ModeMisuseCap pools the images with two rules that each look careful
	// and together defeat the pool: New makes every image as large as the
	// largest thumbnail ("so that it never grows"), and the keep policy
	// drops images larger than a quarter of that ("so that one large
	// request is not pinned"). Every image is dropped at Put, so every Get
	// calls New and allocates the largest image for every request.
	ModeMisuseCap = "misuse-cap"
	// ModeNeverReset pools everything as ModePooled does, but its output
	// buffers are put back without a reset (a pool with a size cap and no
	// reset): each PNG is appended to the ones the buffer already holds,
	// so the responses grow (up to the cap, where the buffer is dropped)
	// and a client decodes the first image the buffer ever held.
	ModeNeverReset = "never-reset"
	// ModeNeverPut pools everything as ModePooled does, but never puts an
	// image or an output buffer back: every Get of those pools is a miss
	// and allocates (the encoder's own pool, which png.Encoder fills,
	// still works).
	ModeNeverPut = "never-put"
)

// Modes lists the pool modes in the order the usage text gives them.
var Modes = []string{ModeUnpooled, ModePooled, ModeMisuseCap, ModeNeverReset, ModeNeverPut}

// Thumbnail bounds: w is a square's side in pixels.
const (
	MinWidth     = 16
	MaxWidth     = 512
	DefaultWidth = 128
	// maxPix is the pixel buffer of the largest thumbnail.
	maxPix = MaxWidth * MaxWidth * 4
	// maxOut caps the pooled output buffers: a little over the largest
	// PNG this service encodes (its pixels uncompressed).
	maxOut = maxPix + 64<<10
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// service renders thumbnails: GET /thumbnail/{id}?w=N draws a square
// image, deterministic in id, of N pixels a side, and answers it as PNG.
// Its handler is safe for concurrent use.
type service struct {
	mode string
	// images, outs and encs are nil in ModeUnpooled.
	images *instrument.Pool[*image.RGBA]
	// noPut is true in ModeNeverPut: images and output buffers are taken,
	// never put back.
	noPut bool
	outs  *instrument.Pool[*bytes.Buffer]
	encs  *encoderPool
}

// newService returns the service for mode and registers its pools (none
// when unpooled) in pools. With poison, the image and output pools poison
// what is Put (POOLPARITY_POISON): a use after Put reads 0xDB bytes, and
// a write after Put is counted in syncpool_dirty_total. The PNG encoder's
// pool holds png.EncoderBuffer, whose state is opaque, and is not
// poisoned.
func newService(mode string, poison bool, pools *instrument.Registry) (*service, error) {
	s := &service{mode: mode}
	var imageOpts []instrument.Option[*image.RGBA]
	var outOpts []instrument.BytesOption
	if poison {
		imageOpts = append(imageOpts, instrument.WithPoison(poisonImage, imagePoisoned))
		outOpts = append(outOpts, instrument.WithBytePoison())
	}
	var err error
	switch mode {
	case ModeUnpooled:
		return s, nil
	case ModePooled, ModeNeverReset, ModeNeverPut:
		s.images, err = instrument.New("image_rgba", append([]instrument.Option[*image.RGBA]{
			instrument.WithNew(func() *image.RGBA { return new(image.RGBA) }),
			instrument.WithKeep(func(m *image.RGBA) bool { return cap(m.Pix) <= maxPix }),
		}, imageOpts...)...)
	case ModeMisuseCap:
		s.images, err = instrument.New("image_rgba", append([]instrument.Option[*image.RGBA]{
			instrument.WithNew(func() *image.RGBA { return &image.RGBA{Pix: make([]uint8, 0, maxPix)} }),
			instrument.WithKeep(func(m *image.RGBA) bool { return cap(m.Pix) <= maxPix/4 }),
		}, imageOpts...)...)
	default:
		return nil, fmt.Errorf("unknown pool mode %q", mode)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the image pool: %w", err)
	}
	s.noPut = mode == ModeNeverPut
	if mode == ModeNeverReset {
		opts := []instrument.Option[*bytes.Buffer]{
			instrument.WithNew(func() *bytes.Buffer { return new(bytes.Buffer) }),
			instrument.WithKeep(func(b *bytes.Buffer) bool { return b.Cap() <= maxOut }),
		}
		if poison {
			// No reset: the bytes a buffer holds are the misuse, so only
			// the capacity past them is poisoned.
			opts = append(opts, instrument.WithPoison(
				func(b *bytes.Buffer) { instrument.PoisonBytes(b.AvailableBuffer()) },
				func(b *bytes.Buffer) bool { return instrument.BytesPoisoned(b.AvailableBuffer()) }))
		}
		s.outs, err = instrument.New("png_out", opts...)
	} else {
		s.outs, err = instrument.NewBufferPool("png_out", maxOut, outOpts...)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the output pool: %w", err)
	}
	encs, err := instrument.New[*png.EncoderBuffer]("png_encoder")
	if err != nil {
		return nil, err
	}
	s.encs = &encoderPool{p: encs}
	if err := pools.Register(s.images, s.outs, encs); err != nil {
		return nil, fmt.Errorf("registering the pools: %w", err)
	}
	return s, nil
}

// poisonImage fills an image's whole pixel buffer, up to its capacity,
// with instrument.PoisonByte: the image pool's poison.
func poisonImage(m *image.RGBA) { instrument.PoisonBytes(m.Pix) }

// imagePoisoned reports whether poisonImage's poison is intact.
func imagePoisoned(m *image.RGBA) bool { return instrument.BytesPoisoned(m.Pix) }

// encoderPool is the png.EncoderBufferPool of the pooled modes: the
// encoder's zlib state and row buffers, kept between images.
type encoderPool struct {
	p *instrument.Pool[*png.EncoderBuffer]
}

func (e *encoderPool) Get() *png.EncoderBuffer  { return e.p.Get() }
func (e *encoderPool) Put(b *png.EncoderBuffer) { e.p.Put(b) }

// routes returns the API's routes, for the otelhttp handler to wrap.
func (s *service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /thumbnail/{id}", s.thumbnail)
	return mux
}

func (s *service) thumbnail(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !idPattern.MatchString(id) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("id %q: want 1 to 64 letters, digits, '_' or '-'", id))
		return
	}
	side := DefaultWidth
	if v := r.URL.Query().Get("w"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinWidth || n > MaxWidth {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("w %q: want a whole number of pixels from %d to %d", v, MinWidth, MaxWidth))
			return
		}
		side = n
	}
	img := s.image(side)
	render(img, seed(id))
	out := s.out()
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if s.encs != nil {
		enc.BufferPool = s.encs
	}
	err := enc.Encode(out, img)
	s.putImage(img)
	if err != nil {
		s.putOut(out)
		writeError(w, http.StatusInternalServerError, "encoding the thumbnail: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	_, _ = w.Write(out.Bytes())
	s.putOut(out)
}

// image returns a side x side image whose pixels the caller overwrites.
func (s *service) image(side int) *image.RGBA {
	rect := image.Rect(0, 0, side, side)
	if s.images == nil {
		return image.NewRGBA(rect)
	}
	m := s.images.Get()
	n := side * side * 4
	if cap(m.Pix) < n {
		m.Pix = make([]uint8, n)
	}
	m.Pix, m.Stride, m.Rect = m.Pix[:n], side*4, rect
	return m
}

func (s *service) putImage(m *image.RGBA) {
	if s.images != nil && !s.noPut {
		s.images.Put(m)
	}
}

func (s *service) out() *bytes.Buffer {
	if s.outs == nil {
		return new(bytes.Buffer)
	}
	return s.outs.Get()
}

func (s *service) putOut(b *bytes.Buffer) {
	if s.outs != nil && !s.noPut {
		s.outs.Put(b)
	}
}

// seed is id's 64-bit FNV-1a hash: the same id draws the same image.
func seed(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// render overwrites every pixel of img with a pattern drawn from seed:
// two gradients and rings around a centre.
func render(img *image.RGBA, seed uint64) {
	side := img.Rect.Dx()
	a, b, c := byte(seed), byte(seed>>8), byte(seed>>16)
	cx, cy := int(seed>>24%uint64(side)), int(seed>>40%uint64(side))
	for y := range side {
		row := img.Pix[y*img.Stride : y*img.Stride+4*side]
		dy := y - cy
		g := byte(y*255/side) ^ b
		for x := range side {
			dx := x - cx
			i := 4 * x
			row[i] = byte(x*255/side) ^ a
			row[i+1] = g
			row[i+2] = byte((dx*dx+dy*dy)>>4) + c
			row[i+3] = 255
		}
	}
}

// writeError answers status with a JSON body {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
