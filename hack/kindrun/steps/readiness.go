package steps

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/poolparity/poolparity/hack/kindrun/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// readyDrop is one pod that was Ready and stopped being so, or was deleted while Ready.
type readyDrop struct {
	At      time.Time
	Pod     string
	Deleted bool
	// Terminating: the pod was being deleted when it left readiness (a scale-down, a rollout, a
	// deletion; the service fails /readyz while it drains). Such a drop is the pod's end, not a
	// readiness failure.
	Terminating bool
}

// readinessLog records the readiness drops of a set of pods. It is safe for concurrent use.
type readinessLog struct {
	mu    sync.Mutex
	ready map[string]bool
	drops []readyDrop
}

func newReadinessLog() *readinessLog { return &readinessLog{ready: map[string]bool{}} }

// observe records pod p's state at at: a drop when p was Ready before and is not now (or is
// gone). A pod seen for the first time is no drop.
func (l *readinessLog) observe(p *corev1.Pod, deleted bool, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was, seen := l.ready[p.Name]
	now := kube.PodReady(p) && !deleted
	if seen && was && !now {
		l.drops = append(l.drops, readyDrop{At: at, Pod: p.Name, Deleted: deleted, Terminating: deleted || p.DeletionTimestamp != nil})
	}
	if deleted {
		delete(l.ready, p.Name)
		return
	}
	l.ready[p.Name] = now
}

// between returns the drops in [from, to].
func (l *readinessLog) between(from, to time.Time) []readyDrop {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []readyDrop
	for _, d := range l.drops {
		if !d.At.Before(from) && !d.At.After(to) {
			out = append(out, d)
		}
	}
	return out
}

// watchReadiness lists the pods of ns matching selector and follows them with a watch (watched
// again when the API server ends it) until ctx ends.
func watchReadiness(ctx context.Context, k *kube.Kube, ns, selector string) (*readinessLog, error) {
	l := newReadinessLog()
	pods := k.CS.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s: %w", selector, err)
	}
	for i := range list.Items {
		l.observe(&list.Items[i], false, time.Now())
	}
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				rv = ""
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if ev.Type == watch.Error || !ok {
					rv = "" // expired: start again from now, with an ADDED event per pod
					break
				}
				rv = p.ResourceVersion
				if ev.Type != watch.Bookmark {
					l.observe(p, ev.Type == watch.Deleted, time.Now())
				}
			}
			w.Stop()
		}
	}()
	return l, nil
}
