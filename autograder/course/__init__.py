"""The course: what students receive, derived from each unit's reference and lesson (build), the nbgrader
source notebook (notebook), nbgrader's runs and the release (release)."""
