package instrument_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/poolparity/poolparity/instrument"
)

type scratch struct {
	ids []int
}

func ExampleNew() {
	p, err := instrument.New("request_scratch",
		instrument.WithNew(func() *scratch { return &scratch{ids: make([]int, 0, 16)} }),
		instrument.WithReset(func(s *scratch) { s.ids = s.ids[:0] }),
		instrument.WithKeep(func(s *scratch) bool { return cap(s.ids) <= 1024 }),
	)
	if err != nil {
		log.Fatal(err)
	}

	s := p.Get()
	s.ids = append(s.ids, 1, 2, 3)
	p.Put(s) // reset, then pooled

	big := p.Get()
	big.ids = make([]int, 0, 4096)
	p.Put(big) // refused by the keep policy: dropped

	st := p.Stats()
	fmt.Printf("gets=%d puts=%d drops=%d misses<=gets:%v\n", st.Gets, st.Puts, st.Drops, st.Misses <= st.Gets)
	// Output: gets=2 puts=1 drops=1 misses<=gets:true
}

func ExampleNew_invalidName() {
	_, err := instrument.New[*bytes.Buffer]("JSON-Buffer")
	fmt.Println(err)
	// Output: invalid pool name: "JSON-Buffer" has 'J' at byte 0 (want [a-z0-9_]+)
}

func ExampleNewBufferPool() {
	p, err := instrument.NewBufferPool("json_buffer", 0) // 64 KiB cap
	if err != nil {
		log.Fatal(err)
	}
	b := p.Get()
	b.WriteString(`{"id":42}`)
	fmt.Println(b.String())
	p.Put(b)

	huge := p.Get()
	huge.Grow(1 << 20)
	p.Put(huge) // over the cap: dropped, not pooled

	st := p.Stats()
	fmt.Printf("gets=%d puts=%d drops=%d\n", st.Gets, st.Puts, st.Drops)
	// Output:
	// {"id":42}
	// gets=2 puts=1 drops=1
}

func ExampleNewByteSlicePool() {
	p, err := instrument.NewByteSlicePool("report_scratch", 1024, 0)
	if err != nil {
		log.Fatal(err)
	}
	bp := p.Get()
	*bp = append(*bp, "hello"...)
	fmt.Println(string(*bp), cap(*bp))
	p.Put(bp)
	// Output: hello 1024
}

func ExampleRegistry() {
	var pools instrument.Registry
	a, _ := instrument.NewBufferPool("json_buffer", 0)
	b, _ := instrument.NewByteSlicePool("report_scratch", 0, 0)
	if err := pools.Register(a, b); err != nil {
		log.Fatal(err)
	}
	a.Put(a.Get())

	// Exporters read a snapshot at scrape time.
	for _, ps := range pools.Snapshot() {
		fmt.Printf("%s gets=%d puts=%d\n", ps.Name, ps.Gets, ps.Puts)
	}
	fmt.Println(pools.Register(a) != nil)
	// Output:
	// json_buffer gets=1 puts=1
	// report_scratch gets=0 puts=0
	// true
}

// A reset that forgets a field lets one request's state reach the next.
// WithCheck catches the dirty object, counts it and hands out a clean one.
func ExampleWithCheck() {
	type session struct {
		user string
		ids  []int
	}
	p, err := instrument.New("request_scratch",
		instrument.WithNew(func() *session { return new(session) }),
		instrument.WithReset(func(s *session) { s.ids = s.ids[:0] }), // forgets user
		instrument.WithCheck(1, func(s *session) error {
			if s.user != "" || len(s.ids) != 0 {
				return fmt.Errorf("session not reset: user %q, %d ids", s.user, len(s.ids))
			}
			return nil
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	s := p.Get()
	s.user, s.ids = "alice", append(s.ids, 7)
	p.Put(s)

	next := p.Get() // the pooled object still says "alice": dropped, a fresh one instead
	st := p.Stats()
	fmt.Printf("user=%q gets=%d misses=%d dirty=%d\n", next.user, st.Gets, st.Misses, st.Dirty)
	// Output: user="" gets=2 misses=2 dirty=1
}

// A handler that returns its buffer to the pool before it writes the
// response from buf.Bytes() sends whatever the next request wrote, but
// only under load. With poisoning on it sends the poison every time, and a
// write into the buffer after its Put is counted and the buffer replaced.
func ExampleWithBytePoison() {
	p, err := instrument.NewBufferPool("response_buffer", 0, instrument.WithBytePoison())
	if err != nil {
		log.Fatal(err)
	}
	buf := p.Get()
	buf.WriteString(`{"user":"alice"}`)
	body := buf.Bytes()
	p.Put(buf) // too early: body is not written yet
	sent := fmt.Sprintf("% x", body[:4])

	buf.WriteString("late") // a write after Put
	next := p.Get()         // takes the written buffer: dropped, a fresh one instead
	st := p.Stats()
	fmt.Println(sent) // what the response would carry
	fmt.Printf("len=%d gets=%d misses=%d dirty=%d\n", next.Len(), st.Gets, st.Misses, st.Dirty)
	// Output:
	// db db db db
	// len=0 gets=2 misses=2 dirty=1
}

// WithPoison poisons objects of any type: here a field and a slice's
// whole capacity. Get checks the poison, then runs the reset again, so
// the caller gets a reset object.
func ExampleWithPoison() {
	type session struct {
		user string
		ids  []int
	}
	const poisoned = "POISONED"
	p, err := instrument.New("request_scratch",
		instrument.WithNew(func() *session { return &session{ids: make([]int, 0, 8)} }),
		instrument.WithReset(func(s *session) { s.user, s.ids = "", s.ids[:0] }),
		instrument.WithPoison(
			func(s *session) {
				s.user = poisoned
				all := s.ids[:cap(s.ids)]
				for i := range all {
					all[i] = -1
				}
			},
			func(s *session) bool {
				for _, id := range s.ids[:cap(s.ids)] {
					if id != -1 {
						return false
					}
				}
				return s.user == poisoned && len(s.ids) == 0
			}),
	)
	if err != nil {
		log.Fatal(err)
	}
	s := p.Get()
	s.user, s.ids = "alice", append(s.ids, 7)
	ids := s.ids
	p.Put(s)
	afterPut := fmt.Sprint(s.user, " ", ids) // a use after Put reads the poison

	s = p.Get() // intact: reset again and handed out
	reused := fmt.Sprintf("user=%q ids=%v", s.user, s.ids)
	p.Put(s)
	s.ids = append(s.ids, 9) // a write after Put

	s = p.Get() // caught: dropped, a fresh one instead
	st := p.Stats()
	fmt.Println("after Put:", afterPut)
	fmt.Println(reused)
	fmt.Printf("user=%q ids=%v dirty=%d\n", s.user, s.ids, st.Dirty)
	// Output:
	// after Put: POISONED [-1]
	// user="" ids=[]
	// user="" ids=[] dirty=1
}
