from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """count/next/previous/results pages; clients may ask for up to 500 rows."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] |= {"minimum": 1, "maximum": self.max_page_size}
                parameter["description"] = f"Results per page (at most {self.max_page_size}; default {self.page_size})."
        return parameters
