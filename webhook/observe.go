package webhook

import "net/http"

// observed reports a request's answer to Config.Observe.
func (s *Sender) observed(resp *http.Response, err error) {
	if s.observe == nil {
		return
	}
	if err != nil || resp == nil {
		s.observe(0)
		return
	}
	s.observe(resp.StatusCode)
}
