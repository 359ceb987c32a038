package status

// tone is how a state feels: fine, on its way, wrong, or none.
type tone int

const (
	plain tone = iota
	good
	busy
	bad
)

var ansi = map[tone]string{good: "\x1b[32m", busy: "\x1b[33m", bad: "\x1b[31m"}

// paint colours s when the style has colour. Colour codes are zero-width
// for the terminal but not for tabwriter, so every cell of a column gets
// codes of the same length: plain cells too.
func (st Style) paint(s string, t tone) string {
	if !st.Color {
		return s
	}
	code, ok := ansi[t]
	if !ok {
		code = "\x1b[39m" // the default colour, as long as the others
	}
	return code + s + "\x1b[0m"
}

func (st Style) bold(s string) string {
	if !st.Color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

func crdTone(c Cluster) tone {
	switch c.CRD {
	case "Established":
		if c.Healthy {
			return good
		}
		return busy
	case "Pending", "Applied":
		return busy
	case "":
		return plain
	}
	return bad
}

func reachTone(r string) tone {
	switch r {
	case "yes":
		return good
	case "no":
		return bad
	}
	return plain
}

func readyTone(r string) tone {
	switch r {
	case "True":
		return good
	case "False":
		return bad
	}
	return busy
}

func phaseTone(p string) tone {
	switch p {
	case "Complete", "RolledBack":
		return good
	case "Failed":
		return bad
	}
	return busy
}

func errorTone(n *int64) tone {
	if n != nil && *n > 0 {
		return bad
	}
	return plain
}

func reasonTone(c Cluster) tone {
	switch {
	case c.Reason == "":
		return plain
	case !c.Healthy:
		return bad
	}
	return busy
}
