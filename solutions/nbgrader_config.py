# nbgrader configuration for an asyncps course: copy this file into your course directory (the
# folder that holds source/, release/, submitted/, autograded/). See solutions/README.md.
c = get_config()  # noqa: F821 - nbgrader provides get_config

c.CourseDirectory.course_id = "asyncps"
# The slowest cell of any assignment runs in about 10 s on 2 cores; allow a slow machine 6x that.
c.Execute.timeout = 60
# The student copies in exercises/ carry a task-specific stub; nbgrader's release writes its own.
c.ClearSolutions.code_stub = {"python": 'raise NotImplementedError("replace this line with your code")'}
